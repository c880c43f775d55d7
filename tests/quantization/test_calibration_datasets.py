"""Calibration data sets: folders of .npy/.npz/images, random samples, batching, errors."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from npuc.diagnostics import NpucError
from npuc.passes.quantization.datasets import (
    Preprocessing,
    folder_dataset,
    model_inputs,
    random_dataset,
)

R = np.random.default_rng(21)


def collect(dataset) -> list[dict[str, np.ndarray]]:
    batches = list(dataset)
    assert len(batches) == len(dataset)
    return batches


# ----------------------------------------------------------------------------- arrays


def test_npy_samples_in_name_order_with_or_without_batch_dim(tmp_path, qm):
    module = qm.relu_model((1, 2, 3))
    samples = [R.standard_normal((2, 3)).astype(np.float32) for _ in range(5)]
    for i, s in enumerate(samples):
        # Mixed shapes: with and without the leading batch dimension of 1.
        np.save(tmp_path / f"s{i:02d}.npy", s if i % 2 else s[None])
    (tmp_path / "notes.txt").write_text("ignored")
    batches = collect(folder_dataset(module, tmp_path, batch_size=2))
    assert [b["x"].shape for b in batches] == [(2, 2, 3), (2, 2, 3), (1, 2, 3)]
    assert np.array_equal(np.concatenate([b["x"] for b in batches]), np.stack(samples))


def test_npy_dtype_is_converted_to_the_input_type(tmp_path, qm):
    module = qm.relu_model((1, 4))
    np.save(tmp_path / "a.npy", np.arange(4, dtype=np.float64))
    np.save(tmp_path / "b.npy", np.arange(4, dtype=np.uint8))
    batches = collect(folder_dataset(module, tmp_path))
    assert all(b["x"].dtype == np.float32 for b in batches)
    assert np.array_equal(batches[1]["x"], [[0, 1, 2, 3]])


def test_npz_keyed_by_input_name_for_two_inputs(tmp_path, qm):
    module = qm.add_model((1, 3), (1, 3))
    a = R.standard_normal((4, 3)).astype(np.float32)
    b = R.standard_normal((4, 3)).astype(np.float32)
    for i in range(4):
        np.savez(tmp_path / f"{i}.npz", a=a[i], b=b[i : i + 1])
    (batch,) = collect(folder_dataset(module, tmp_path, batch_size=4))
    assert np.array_equal(batch["a"], a) and np.array_equal(batch["b"], b)


def test_npz_single_array_for_single_input(tmp_path, qm):
    module = qm.relu_model((1, 3))
    np.savez(tmp_path / "0.npz", np.ones(3, np.float32))
    (batch,) = collect(folder_dataset(module, tmp_path))
    assert np.array_equal(batch["x"], np.ones((1, 3)))


def test_model_batch_above_one_groups_samples_and_drops_the_remainder(tmp_path, qm):
    module = qm.relu_model((2, 3))
    samples = R.standard_normal((7, 3)).astype(np.float32)
    np.save(tmp_path / "a_whole_batch.npy", samples[:2])  # the whole input shape: 2 samples
    for i in range(2, 7):
        np.save(tmp_path / f"b{i}.npy", samples[i])
    dataset = folder_dataset(module, tmp_path, batch_size=4)
    assert (dataset.sample_count, dataset.used_samples, len(dataset)) == (7, 6, 2)
    batches = collect(dataset)
    assert [b["x"].shape for b in batches] == [(4, 3), (2, 3)]
    assert np.array_equal(np.concatenate([b["x"] for b in batches]), samples[:6])
    with pytest.raises(NpucError, match="multiple of the model's batch 2"):
        folder_dataset(module, tmp_path, batch_size=3)


def test_limit_uses_the_first_files(tmp_path, qm):
    module = qm.relu_model((1, 2))
    for i in range(5):
        np.save(tmp_path / f"{i}.npy", np.full(2, i, np.float32))
    batches = collect(folder_dataset(module, tmp_path, batch_size=8, limit=3))
    assert np.array_equal(batches[0]["x"][:, 0], [0, 1, 2])


# ----------------------------------------------------------------------------- images


def save_png(path, pixels: np.ndarray) -> None:
    Image.fromarray(pixels.astype(np.uint8)).save(path)


def test_png_is_resized_bilinear_to_nchw_rgb(tmp_path, qm):
    module = qm.relu_model((1, 3, 4, 6))
    big = R.integers(0, 256, (8, 12, 3)).astype(np.uint8)
    same = R.integers(0, 256, (4, 6, 3)).astype(np.uint8)
    save_png(tmp_path / "a.png", big)
    save_png(tmp_path / "b.png", same)
    a, b = (batch["x"] for batch in collect(folder_dataset(module, tmp_path)))
    assert a.shape == (1, 3, 4, 6) and a.dtype == np.float32
    assert np.array_equal(b[0], same.transpose(2, 0, 1).astype(np.float32))
    expected = np.asarray(
        Image.fromarray(big).resize((6, 4), Image.Resampling.BILINEAR), np.float32
    )
    assert np.array_equal(a[0], expected.transpose(2, 0, 1))


def test_mean_scale_and_bgr(tmp_path, qm):
    module = qm.relu_model((1, 3, 2, 2))
    pixels = R.integers(0, 256, (2, 2, 3)).astype(np.uint8)
    save_png(tmp_path / "img.png", pixels)
    mean, scale = (10.0, 20.0, 30.0), (0.5, 0.25, 2.0)
    pre = Preprocessing(mean=mean, scale=scale, reverse_channels=True)
    (batch,) = collect(folder_dataset(module, tmp_path, preprocessing=pre))
    bgr = pixels[:, :, ::-1].astype(np.float32)
    expected = ((bgr - np.array(mean)) * np.array(scale)).transpose(2, 0, 1)
    assert np.allclose(batch["x"][0], expected, rtol=1e-6)
    scalar = Preprocessing(mean=127.5, scale=1 / 127.5)
    (batch,) = collect(folder_dataset(module, tmp_path, preprocessing=scalar))
    rgb = pixels.astype(np.float32).transpose(2, 0, 1)
    assert np.allclose(batch["x"][0], (rgb - 127.5) / 127.5, rtol=1e-6)


def test_grayscale_nhwc_input(tmp_path, qm):
    module = qm.relu_model((1, 4, 5, 1))  # NHWC (dim 1 is not 1 or 3), one channel
    pixels = R.integers(0, 256, (4, 5)).astype(np.uint8)
    save_png(tmp_path / "g.png", pixels)
    (batch,) = collect(folder_dataset(module, tmp_path))
    assert np.array_equal(batch["x"], pixels[None, :, :, None].astype(np.float32))


def test_other_image_formats(tmp_path, qm):
    module = qm.relu_model((1, 3, 4, 4))
    pixels = R.integers(0, 256, (4, 4, 3)).astype(np.uint8)
    for suffix in ("bmp", "ppm", "jpg"):
        Image.fromarray(pixels).save(tmp_path / f"img.{suffix}")
    batches = collect(folder_dataset(module, tmp_path))
    assert len(batches) == 3
    lossless = [b["x"][0] for b in batches[:1] + batches[2:]]  # bmp, ppm (jpg is lossy)
    for x in lossless:
        assert np.array_equal(x, pixels.transpose(2, 0, 1))


# ----------------------------------------------------------------------------- errors


def test_empty_folder(tmp_path, qm):
    (tmp_path / "readme.md").write_text("no samples here")
    with pytest.raises(NpucError, match="no calibration samples") as e:
        folder_dataset(qm.relu_model((1, 3)), tmp_path)
    assert str(tmp_path) in str(e.value)
    with pytest.raises(NpucError, match="no such folder"):
        folder_dataset(qm.relu_model((1, 3)), tmp_path / "missing")


def test_wrong_shape_names_the_file_and_the_expected_shape(tmp_path, qm):
    np.save(tmp_path / "good.npy", np.zeros((1, 3), np.float32))
    np.save(tmp_path / "bad.npy", np.zeros((4,), np.float32))
    with pytest.raises(NpucError) as e:
        folder_dataset(qm.relu_model((1, 3)), tmp_path)
    message = str(e.value)
    assert "bad.npy" in message and "(1, 3)" in message and "(4,)" in message


@pytest.mark.parametrize("name", ["junk.npy", "junk.npz", "junk.png", "junk.jpg"])
def test_garbage_files_are_reported(tmp_path, qm, name):
    (tmp_path / name).write_bytes(b"definitely not what the suffix says" * 3)
    shape = (1, 3, 2, 2) if name.endswith(("png", "jpg")) else (1, 3)
    with pytest.raises(NpucError) as e:
        folder_dataset(qm.relu_model(shape), tmp_path)
    assert name in str(e.value)


def test_pickled_npy_is_refused(tmp_path, qm):
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(NpucError, match=r"obj\.npy"):
        folder_dataset(qm.relu_model((1,)), tmp_path)


def test_npz_missing_input_and_npy_for_two_inputs(tmp_path, qm):
    module = qm.add_model((1, 3), (1, 3))
    np.savez(tmp_path / "s.npz", a=np.zeros(3, np.float32))
    with pytest.raises(NpucError, match=r"no array for input.* b"):
        folder_dataset(module, tmp_path)
    (tmp_path / "s.npz").unlink()
    np.save(tmp_path / "s.npy", np.zeros(3, np.float32))
    with pytest.raises(NpucError, match=r"use \.npz files keyed by input name"):
        folder_dataset(module, tmp_path)


def test_images_need_an_image_shaped_input(tmp_path, qm):
    save_png(tmp_path / "a.png", np.zeros((2, 2, 3)))
    with pytest.raises(NpucError, match="images need an input of shape"):
        folder_dataset(qm.relu_model((1, 5)), tmp_path)
    with pytest.raises(NpucError, match="single-input model"):
        folder_dataset(qm.add_model((1, 3, 2, 2), (1, 3, 2, 2)), tmp_path)
    with pytest.raises(NpucError, match="mean needs 1 or 3 values"):
        list(
            folder_dataset(
                qm.relu_model((1, 3, 2, 2)), tmp_path, preprocessing=Preprocessing(mean=(1, 2))
            )
        )


def test_too_few_samples_for_the_model_batch(tmp_path, qm):
    np.save(tmp_path / "one.npy", np.zeros(3, np.float32))
    with pytest.raises(NpucError, match="fewer than the model's batch 4"):
        folder_dataset(qm.relu_model((4, 3)), tmp_path)


# ----------------------------------------------------------------------------- random


def test_random_dataset_is_seeded_and_independent_of_batch_size(qm):
    module = qm.add_model((1, 2, 3), (1, 3))
    a = np.concatenate([b["a"] for b in collect(random_dataset(module, 6, seed=3))])
    grouped = collect(random_dataset(module, 6, seed=3, batch_size=4))
    assert [b["a"].shape for b in grouped] == [(4, 2, 3), (2, 2, 3)]
    assert np.array_equal(a, np.concatenate([b["a"] for b in grouped]))
    other = np.concatenate([b["a"] for b in collect(random_dataset(module, 6, seed=4))])
    assert not np.array_equal(a, other)
    assert a.dtype == np.float32
    assert abs(a.mean()) < 1 and 0.5 < a.std() < 1.5
    with pytest.raises(NpucError, match="must be positive"):
        random_dataset(module, 0)


def test_model_inputs(qm):
    (spec,) = model_inputs(qm.relu_model((2, 3, 4)))
    assert (spec.name, spec.shape, spec.batch, spec.sample_shape) == ("x", (2, 3, 4), 2, (3, 4))


def test_truncated_files_fail_when_read(tmp_path, qm):
    save_png(tmp_path / "cut.png", R.integers(0, 256, (32, 32, 3)))
    data = (tmp_path / "cut.png").read_bytes()
    (tmp_path / "cut.png").write_bytes(data[: len(data) // 2])
    dataset = folder_dataset(qm.relu_model((1, 3, 4, 4)), tmp_path)
    with pytest.raises(NpucError, match="cannot decode image") as e:
        list(dataset)
    assert "cut.png" in str(e.value)
    (tmp_path / "cut.png").unlink()
    np.save(tmp_path / "cut.npy", np.zeros((1, 300), np.float32))
    data = (tmp_path / "cut.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(data[:-100])
    dataset = folder_dataset(qm.relu_model((1, 300)), tmp_path)
    with pytest.raises(NpucError, match="cannot read array file") as e:
        list(dataset)
    assert "cut.npy" in str(e.value)


def test_preprocessing_values_and_where_they_apply_are_checked(tmp_path, qm):
    with pytest.raises(NpucError, match="scale must be finite and non-zero"):
        Preprocessing(scale=(1.0, 0.0, 1.0))
    with pytest.raises(NpucError, match="mean must be finite"):
        Preprocessing(mean=float("nan"))
    np.save(tmp_path / "one.npy", np.zeros((1, 3, 2, 2), np.float32))
    model = qm.relu_model((1, 3, 2, 2))
    with pytest.raises(NpucError, match="apply to images; this folder holds arrays"):
        folder_dataset(model, tmp_path, preprocessing=Preprocessing(mean=127.5))
    assert len(list(folder_dataset(model, tmp_path))) == 1  # arrays without preprocessing
    images = tmp_path / "images"
    images.mkdir()
    save_png(images / "a.png", np.zeros((2, 2, 3)))
    with pytest.raises(NpucError, match="mean needs 1 or 3 values, got 2"):
        folder_dataset(model, images, preprocessing=Preprocessing(mean=(1, 2)))  # before reading

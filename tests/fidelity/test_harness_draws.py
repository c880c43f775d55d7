"""The fidelity harness's calibration draws: rows averaged per method, the test set kept apart."""

from __future__ import annotations

import pytest
from fidelity.harness import SPECS, TEST_SEED, Row, main, mean_rows, table


def rows(agreements: list[float], cosine: float) -> list[Row]:
    return [
        Row(f"method {i}", a, cosine, 10.0 * (i + 1) * cosine, 0.5, 1.0)
        for i, a in enumerate(agreements)
    ]


def test_one_draw_is_reported_as_it_is():
    draw = rows([0.9, 0.8], 0.95)
    assert mean_rows([draw]) is draw
    text = table(SPECS["ppocr_cls"], 64, 100, draw)
    assert "| method 0 | 0.900 | 0.9500 | 9.5 | 0.500 | 1.0 |" in text
    assert "per set" not in text


def test_several_draws_average_each_figure_per_method():
    first, second = rows([0.9, 0.8], 0.9), rows([0.7, 1.0], 0.7)
    averaged = mean_rows([first, second])
    assert [r.method for r in averaged] == ["method 0", "method 1"]
    assert averaged[0].agreement == pytest.approx(0.8)
    assert averaged[1].agreement == pytest.approx(0.9)
    assert averaged[0].cosine == pytest.approx(0.8)
    assert averaged[1].sqnr_db == pytest.approx((18.0 + 14.0) / 2)
    assert averaged[0].seconds == 2.0  # the time of every draw together
    assert averaged[1].per_draw == (0.8, 1.0)
    text = table(SPECS["ppocrv4_rec"], 24, 40, averaged, draws=2)
    assert "each of 2 calibration sets" in text
    last = "| method 1 | 0.900 | 0.8000 | 16.0 | 0.500 | 2.0 | 0.800 / 1.000 |"
    assert text.splitlines()[-1] == last


def test_draws_must_list_the_same_methods():
    with pytest.raises(AssertionError):
        mean_rows([rows([0.9], 0.9), [Row("other", 0.9, 0.9, 1.0, 0.5, 1.0)]])


@pytest.mark.parametrize(
    ("seeds", "message"),
    [(f"0,{TEST_SEED}", "draws the test set"), ("0,x", "takes integers")],
)
def test_calibration_seeds_are_checked(capsys, seeds, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["--models", "ppocr_cls", "--calib-seeds", seeds])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_no_model_draws_its_calibration_from_the_test_seed():
    assert all(TEST_SEED not in spec.draws for spec in SPECS.values())

"""Which ONNX opsets and op versions the importer implements.

npuc implements the default-domain ops as defined up to opset 21. A model may
import any opset the installed onnx package knows; each node is then judged by
the schema version its op has in that opset (`since_version`): a version newer
than 21 is unsupported unless it is listed in `SAME_AS_OPSET_21`.
"""

from __future__ import annotations

import functools

import onnx

MIN_OPSET, MAX_OPSET = 7, 21

# Op versions after opset 21 whose semantics on the tensors npuc handles are
# those of the op's opset-21 version: op type -> newest such version. Each was
# checked by comparing the schemas (attributes, inputs, outputs, documentation):
# - opset 22 adds bfloat16 (Dropout also float8) to the T constraint; AveragePool
#   and MaxPool-22 also spell out that a ceil-mode window starting in the end
#   padding is dropped, which npuc does at every opset;
# - opsets 23, 24 and 25 add float4e2m1, float8e8m0 and int2/uint2 to the
#   type-generic ops; Cast/CastLike-24 also add `round_mode` and change float8
#   saturation, which only concern the 8-bit float targets the Cast folder refuses;
# - opset 28: Cast adds float6 types; DepthToSpace gains a function body only;
#   ReduceLogSum/ReduceLogSumExp drop their integer types and gain a new body.
# Not listed, since they change behaviour: SpaceToDepth-28 (adds `mode`),
# Mod-28 (defines fmod=0 on floats), Range-27 (adds `stash_type`).
SAME_AS_OPSET_21: dict[str, int] = {
    **dict.fromkeys(
        [
            "AveragePool",
            "Conv",
            "ConvTranspose",
            "Cos",
            "Dropout",
            "Elu",
            "GlobalAveragePool",
            "GlobalMaxPool",
            "GRU",
            "HardSigmoid",
            "HardSwish",
            "InstanceNormalization",
            "LSTM",
            "MaxPool",
            "Mish",
            "RNN",
            "Round",
            "Selu",
            "Sin",
            "Softplus",
            "Softsign",
        ],
        22,
    ),
    **dict.fromkeys(
        [
            "CastLike",
            "Constant",
            "ConstantOfShape",
            "Flatten",
            "Identity",
            "Pad",
            "Reshape",
            "Shape",
            "Size",
            "Squeeze",
            "Transpose",
            "Unsqueeze",
        ],
        25,
    ),
    **dict.fromkeys(["Cast", "DepthToSpace", "ReduceLogSum", "ReduceLogSumExp"], 28),
}


def newest_opset() -> int:
    """The newest default-domain opset the installed onnx package defines."""
    return onnx.defs.onnx_opset_version()


def op_version(op_type: str, opset: int, domain: str = "") -> int | None:
    """The `since_version` of `op_type`'s schema in `opset`, or None for an unknown op."""
    try:
        return onnx.defs.get_schema(op_type, opset, domain).since_version
    except onnx.defs.SchemaError:
        return None


def version_issue(op_type: str, opset: int, domain: str = "") -> str | None:
    """Why a node of `op_type` in a model of `opset` is not supported, or None if it is."""
    since = op_version(op_type, opset, domain)
    if since is None or since <= MAX_OPSET or since <= SAME_AS_OPSET_21.get(op_type, 0):
        return None
    return f"{op_type}-{since} is newer than npuc supports (opset <= {MAX_OPSET})"


@functools.lru_cache(maxsize=1024)
def arity_issue(op_type: str, opset: int, inputs: int, outputs: int) -> str | None:
    """Why a default-domain node with `inputs` input and `outputs` output slots (empty
    names included) breaks its schema's counts, or None (also for an unknown op)."""
    try:
        schema = onnx.defs.get_schema(op_type, opset, "")
    except onnx.defs.SchemaError:
        return None
    counts = (
        ("input", inputs, schema.min_input, schema.max_input),
        ("output", outputs, schema.min_output, schema.max_output),
    )
    for what, n, low, high in counts:
        if not low <= n <= high:
            if low == high:
                bound = f"{low}"
            else:
                bound = f"{low} to {high}" if high < 2**31 - 1 else f"at least {low}"
            return f"{op_type}-{schema.since_version} takes {bound} {what}s, not {n}"
    return None

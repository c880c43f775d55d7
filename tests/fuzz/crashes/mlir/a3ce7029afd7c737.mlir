 â%3 = npu.eltwise lhs <"mutable", 0, [2, 3, 4], i8> rhs <"activations", 128, [2, 3, 4], i8> ofm <"activations", 192, [2, 3, 4], i8> {kind = "maximum"}

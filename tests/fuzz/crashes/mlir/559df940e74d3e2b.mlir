npu.program @kinds regions [#npu.region<"constants", 64, "flash">, #npu.region<"mutable", 256, "dram">, #npu.region<"activations", 1024, "sram">] inputs [#npu.io<"a", #npu.tensor<"mutable", 0, [2, 3, 4], i8>, 0.05:-3>, #npu.io<"b", #npu.tensor<"mutable", 32, [4], u8>, 0.1:128>, #npu.io<"h", #npu.tensor<"mutable", 64, [2, 3, 4], i16>, 0.000244140625:0>] outputs [#npu.io<"p", #npu.tensor<"mutable", 128, [2, 3, 4], i8>, 0.05:5>] layers [] {
  %14 = npu.dma <"activations", 384, [2, 3, 4], i8> -> <"mutable", 128, [2, 3, 4], i8> after %6
  %6 = npu.eltwise lhs <"mutable", 0, [2, 3, 4], i8> rhs <"constants", 0, [2, 3, 4], [0, 0, 1], i8> ofm <"activations", 384, [2, 3, 4], i8> {kind = "prelu", rhs_zero_point = 5 : i64, rhs_multiplier = 1073741824 : i64, rhs_shift = 33 : i64}
}

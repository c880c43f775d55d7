// A small network in npu IR for tests/npu: every instruction kind, double-buffered
// weights, tokens between the engines, a host op.
npu.program @tiny regions [#npu.region<"constants", 2048, "flash">, #npu.region<"mutable", 1024, "sram">, #npu.region<"activations", 4096, "sram">, #npu.region<"sram", 4096, "sram">] inputs [#npu.io<"x", #npu.tensor<"mutable", 0, [1, 8, 8, 8], i8>, 0.05:-3>] outputs [#npu.io<"y", #npu.tensor<"mutable", 512, [1, 10], i8>, 0.00390625:-128>, #npu.io<"class", #npu.tensor<"mutable", 576, [1], i64>>, #npu.io<"padded", #npu.tensor<"mutable", 640, [10], i8>, 0.05:-3>] layers ["conv1", "dw", "add", "act", "pool", "fc", "softmax", "argmax"] attributes {constants = dense<0> : tensor<896xi8>, debug = {producer = "npuc test"}} {
  %0 = npu.dma <"constants", 0, [8, 8, 1, 1], i8> -> <"sram", 0, [8, 8, 1, 1], i8> {layer = 0 : i64}
  %1 = npu.dma <"constants", 192, [8, 1, 3, 3], i8> -> <"sram", 128, [8, 1, 3, 3], i8> {layer = 1 : i64}
  %2 = npu.conv2d ifm <"mutable", 0, [1, 8, 8, 8], i8> weights <"sram", 0, [8, 8, 1, 1], i8> bias_scale <"constants", 64, [8, 4], i32> ofm <"activations", 0, [1, 8, 8, 8], [512, 1, 64, 8], i8> after %0 {ifm_zero_point = -3 : i64, ofm_zero_point = -128 : i64, clamp_max = 0 : i64, rounding = "tflite", layer = 0 : i64}
  %3 = npu.conv2d ifm <"activations", 0, [1, 8, 8, 8], [512, 1, 64, 8], i8> weights <"sram", 128, [8, 1, 3, 3], i8> bias_scale <"constants", 272, [8, 4], i32> ofm <"activations", 512, [1, 8, 8, 8], i8> after %1 {pads = array<i64: 1, 1, 1, 1>, groups = 8 : i64, ifm_zero_point = -128 : i64, layer = 1 : i64}
  %4 = npu.eltwise lhs <"activations", 0, [1, 8, 8, 8], [512, 1, 64, 8], i8> rhs <"activations", 512, [1, 8, 8, 8], i8> ofm <"activations", 1024, [1, 8, 8, 8], i8> {kind = "add", lhs_zero_point = -128 : i64, left_shift = 20 : i64, lhs_multiplier = 1073741824 : i64, lhs_shift = 31 : i64, rhs_multiplier = 1073741824 : i64, rhs_shift = 31 : i64, shift = 50 : i64, layer = 2 : i64}
  %5 = npu.lut ifm <"activations", 1024, [1, 8, 8, 8], i8> table <"constants", 400, [256], i8> ofm <"activations", 1536, [1, 8, 8, 8], i8> {table_base = -128 : i64, layer = 3 : i64}
  %6 = npu.pool ifm <"activations", 1536, [1, 8, 8, 8], i8> ofm <"activations", 2176, [1, 8, 4, 4], i8> {mode = "max", kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, layer = 4 : i64}
  %7 = npu.pool ifm <"activations", 1536, [1, 8, 8, 8], i8> ofm <"activations", 2048, [1, 8, 1, 1], i8> {mode = "avg", kernel = array<i64: 8, 8>, ifm_zero_point = -3 : i64, ofm_zero_point = -3 : i64, layer = 4 : i64}
  %8 = npu.move ifm <"activations", 2048, [1, 8, 1, 1], i8> ofm <"activations", 2064, [1, 8], i8> {layer = 5 : i64}
  %9 = npu.matmul lhs <"activations", 2064, [1, 1, 8], i8> rhs <"constants", 656, [1, 8, 10], [0, 1, 8], i8> bias_scale <"constants", 736, [10, 4], i32> ofm <"activations", 2080, [1, 1, 10], i8> {lhs_zero_point = -3 : i64, layer = 5 : i64}
  %10 = npu.softmax ifm <"activations", 2080, [1, 10], i8> ofm <"mutable", 512, [1, 10], i8> {input_multiplier = 1717986944 : i64, input_left_shift = 22 : i64, diff_min = -496 : i64, layer = 6 : i64}
  %11 = npu.move ifm <"activations", 2048, [1, 8, 1, 1], i8> ofm <"sram", 1024, [1, 10, 1, 1], i8> {perm = array<i64: 0, 1, 3, 2>, pads = array<i64: 0, 1, 0, 0, 0, 1, 0, 0>, pad_value = -3 : i64}
  %12 = npu.dma <"sram", 1024, [10], i8> -> <"mutable", 640, [10], i8> after %11
  %13 = npu.host ins [#npu.tensor<"mutable", 512, [1, 10], i8>] outs [#npu.tensor<"mutable", 576, [1], i64>] after %10 attributes {layer = 7 : i64} {
  ^bb0(%y: tensor<1x10x!qnn.uniform<i8:f32, 0.00390625:-128>>):
    %c = qnn.argmax %y {axis = 1 : i64, keepdims = false} : (tensor<1x10x!qnn.uniform<i8:f32, 0.00390625:-128>>) -> tensor<1xi64>
    npu.yield %c : tensor<1xi64>
  }
  %14 = npu.dma <"constants", 656, [64], i8> -> <"sram", 0, [64], i8> after %2
}

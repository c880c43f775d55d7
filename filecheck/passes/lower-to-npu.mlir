// RUN: npu-opt %s --split-input-file -p 'plan-memory{target=mcu-64},lower-to-npu' | filecheck %s
// RUN: npu-opt %s --split-input-file -p 'tile{target=mcu-64 manual="(1,1,2,1)"},plan-memory{target=mcu-64},lower-to-npu' | filecheck %s --check-prefix=TILED
// RUN: not npu-opt %s --split-input-file -p 'lower-to-npu' 2>&1 | filecheck %s --check-prefix=UNPLANNED
// RUN: not npu-opt %s --split-input-file -p 'plan-memory{target=mcu-64},lower-to-npu{host=none}' 2>&1 | filecheck %s --check-prefix=NO-HOST
// RUN: not npu-opt %s --split-input-file -p 'plan-memory{target=mcu-64},lower-to-npu{host=gpu}' 2>&1 | filecheck %s --check-prefix=BAD-HOST

// UNPLANNED: error: lower-to-npu needs a memory-planned module (no mem.region): run plan-memory{target=NAME} first
// BAD-HOST: error: lower-to-npu: host must be one of none, float, all, got 'gpu'

// NHWC input, transposed (a strided view: no instruction), conv with per-channel weights and a
// bias (packed with the multipliers, shifts and weight zero points into a bias_scale table after
// the planned constants: weights at 0, bias at 64, table at 128), add, max pool into the output.
// The compute engine runs everything in order: no tokens.
// CHECK:       npu.program @main regions [#npu.region<"constants", 192, "flash">, #npu.region<"mutable", 128, "sram">, #npu.region<"activations", 128, "sram">]
// CHECK-SAME:    inputs [#npu.io<"x", #npu.tensor<"mutable", 0, [1, 4, 4, 2], i8>, 0.05:-3>]
// CHECK-SAME:    outputs [#npu.io<"y", #npu.tensor<"mutable", 64, [1, 2, 2, 2], i8>, 0.1:0>]
// CHECK-SAME:    layers ["conv", "add", "pool"]
// CHECK-SAME:    constants = dense<"0x010101{{[0-9A-F]*}}05000000FBFFFFFF{{0*}}05000000000000402400000000000000FBFFFFFFCDCCCC4C25"> : tensor<153xi8>
// CHECK-NEXT:  %0 = npu.conv2d ifm <"mutable", 0, [1, 2, 4, 4], [32, 1, 8, 2], i8> weights <"constants", 0, [2, 2, 3, 3], i8> bias_scale <"constants", 128, [2, 4], i32> ofm <"activations", 64, [1, 2, 4, 4], i8> {pads = array<i64: 1, 1, 1, 1>, ifm_zero_point = -3 : i64, clamp_min = 0 : i64, layer = 0 : i64}
// CHECK-NEXT:  %1 = npu.eltwise lhs <"activations", 64, [1, 2, 4, 4], i8> rhs <"activations", 64, [1, 2, 4, 4], i8> ofm <"activations", 64, [1, 2, 4, 4], i8> {kind = "add", left_shift = 20 : i64, lhs_multiplier = 1073741824 : i64, lhs_shift = 31 : i64, rhs_multiplier = 1073741824 : i64, rhs_shift = 31 : i64, shift = 50 : i64, layer = 1 : i64}
// CHECK-NEXT:  %2 = npu.pool ifm <"activations", 64, [1, 2, 4, 4], i8> ofm <"mutable", 64, [1, 2, 2, 2], i8> {mode = "max", kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, layer = 2 : i64}
// CHECK-NEXT:  }

// Tiled: the weights are DMAed to SRAM (the bias load is dropped: the table has it) and the
// conv waits for that token. The add runs in two row stripes: each reads strided views of the
// conv output (the plan's slice copies are not needed) and writes straight into its slice of
// the assembled tensor (no tile.insert copy).
// TILED:       layers ["conv", "add", "pool"]
// TILED-NEXT:  %0 = npu.dma <"constants", 0, [2, 2, 3, 3], i8> -> <"activations", 64, [2, 2, 3, 3], i8> {layer = 0 : i64}
// TILED-NEXT:  %1 = npu.conv2d ifm <"mutable", 0, [1, 2, 4, 4], [32, 1, 8, 2], i8> weights <"activations", 64, [2, 2, 3, 3], i8> bias_scale <"constants", 128, [2, 4], i32> ofm <"activations", 192, [1, 2, 4, 4], i8> after %0 {{{.*}}layer = 0 : i64}
// TILED-NEXT:  %2 = npu.eltwise lhs <"activations", 192, [1, 2, 2, 4], [32, 16, 4, 1], i8> rhs <"activations", 192, [1, 2, 2, 4], [32, 16, 4, 1], i8> ofm <"activations", 0, [1, 2, 2, 4], [32, 16, 4, 1], i8> {kind = "add", {{.*}}layer = 1 : i64}
// TILED-NEXT:  %3 = npu.eltwise lhs <"activations", 200, [1, 2, 2, 4], [32, 16, 4, 1], i8> rhs <"activations", 200, [1, 2, 2, 4], [32, 16, 4, 1], i8> ofm <"activations", 8, [1, 2, 2, 4], [32, 16, 4, 1], i8> {kind = "add", {{.*}}layer = 1 : i64}
// TILED-NEXT:  %4 = npu.pool ifm <"activations", 0, [1, 2, 4, 4], i8> ofm <"mutable", 64, [1, 2, 2, 2], i8> {mode = "max", {{.*}}layer = 2 : i64}
// TILED-NEXT:  }

func.func @main(%x: tensor<1x4x4x2x!qnn.uniform<i8:f32, 0.05:-3>> {nn.name = "x"}) -> (tensor<1x2x2x2x!qnn.uniform<i8:f32, 0.1>> {nn.name = "y"}) {
  %t = qnn.transpose %x {perm = array<i64: 0, 3, 1, 2>, name = "nchw"} : (tensor<1x4x4x2x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x2x4x4x!qnn.uniform<i8:f32, 0.05:-3>>
  %w = qnn.constant {value = dense<1> : tensor<2x2x3x3xi8>} : tensor<2x2x3x3x!qnn.uniform<i8:f32:0, {0.01, 0.02}>>
  %b = qnn.constant {value = dense<[5, -5]> : tensor<2xi32>} : tensor<2xi32>
  %c = qnn.conv2d %t, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, multiplier = array<i64: 1073741824, 1288490189>, shift = array<i64: 36, 37>, clamp_min = 0 : i64, name = "conv"} : (tensor<1x2x4x4x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x2x3x3x!qnn.uniform<i8:f32:0, {0.01, 0.02}>>, tensor<2xi32>) -> tensor<1x2x4x4x!qnn.uniform<i8:f32, 0.1>>
  %a = qnn.add %c, %c {left_shift = 20 : i64, lhs_multiplier = 1073741824 : i64, lhs_shift = 31 : i64, rhs_multiplier = 1073741824 : i64, rhs_shift = 31 : i64, multiplier = array<i64: 1073741824>, shift = array<i64: 50>, name = "add"} : (tensor<1x2x4x4x!qnn.uniform<i8:f32, 0.1>>, tensor<1x2x4x4x!qnn.uniform<i8:f32, 0.1>>) -> tensor<1x2x4x4x!qnn.uniform<i8:f32, 0.1>>
  %p = qnn.max_pool2d %a {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, name = "pool"} : (tensor<1x2x4x4x!qnn.uniform<i8:f32, 0.1>>) -> tensor<1x2x2x2x!qnn.uniform<i8:f32, 0.1>>
  func.return %p : tensor<1x2x2x2x!qnn.uniform<i8:f32, 0.1>>
}

// -----

// Float ops run on the host (quantize, the float softmax, dequantize), as with every host mode but none;
// the host instruction waits for the compute engine's output, and the compute for the host's.
// CHECK:       npu.program @main
// CHECK-SAME:    inputs [#npu.io<"x", #npu.tensor<"mutable", 0, [1, 1, 2, 4], f32>>]
// CHECK-SAME:    layers ["q", "relu", "softmax"]
// CHECK:         %0 = npu.host ins [#npu.tensor<"mutable", 0, [1, 1, 2, 4], f32>] outs [#npu.tensor<"activations", [[Q:[0-9]+]], [1, 1, 2, 4], i8>] attributes {layer = 0 : i64} {
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<1x1x2x4xf32>):
// CHECK-NEXT:      %{{.*}} = qnn.quantize %{{.*}} {name = "q"}
// CHECK:         %{{.*}} = npu.pool ifm <"activations", [[Q]], [1, 1, 2, 4], i8> ofm <"activations", {{[0-9]+}}, [1, 1, 2, 4], i8> after %0 {mode = "sum", {{.*}}clamp_min = -3 : i64, layer = 1 : i64}
// CHECK:         npu.host {{.*}} after %{{[0-9]+}}
// CHECK:         qnn.dequantize
// CHECK:         nn.softmax
// NO-HOST:      error: lower-to-npu: 3 op(s) cannot be lowered:
// NO-HOST-NEXT:   'qnn.quantize' (layer 'q'): float ops run on the host (host=float)
// NO-HOST-NEXT:   'qnn.dequantize': float ops run on the host (host=float)
// NO-HOST-NEXT:   'nn.softmax' (layer 'softmax'): float ops run on the host (host=float)
func.func @main(%x: tensor<1x1x2x4xf32> {nn.name = "x"}) -> (tensor<1x1x2x4xf32> {nn.name = "y"}) {
  %q = qnn.quantize %x {name = "q"} : (tensor<1x1x2x4xf32>) -> tensor<1x1x2x4x!qnn.uniform<i8:f32, 0.1:-3>>
  %r = qnn.requantize %q {multiplier = array<i64: 1073741824>, shift = array<i64: 30>, clamp_min = -3 : i64, name = "relu"} : (tensor<1x1x2x4x!qnn.uniform<i8:f32, 0.1:-3>>) -> tensor<1x1x2x4x!qnn.uniform<i8:f32, 0.1:-3>>
  %d = qnn.dequantize %r : (tensor<1x1x2x4x!qnn.uniform<i8:f32, 0.1:-3>>) -> tensor<1x1x2x4xf32>
  %s = nn.softmax %d {axis = 3 : i64, name = "softmax"} : (tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  func.return %s : tensor<1x1x2x4xf32>
}

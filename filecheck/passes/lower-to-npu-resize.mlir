// RUN: npu-opt %s --split-input-file -p 'plan-memory{target=mcu-64},lower-to-npu{host=all}' | filecheck %s
// RUN: npu-opt %s --split-input-file -p 'tile{target=mcu-64},plan-memory{target=mcu-64},lower-to-npu{host=all}' | filecheck %s --check-prefix=TILED
// RUN: not npu-opt %s --split-input-file -p 'plan-memory{target=mcu-64},lower-to-npu{host=none}' 2>&1 | filecheck %s --check-prefix=NO-HOST

// Only the last resize needs the host.
// NO-HOST:      error: lower-to-npu: 1 op(s) cannot be lowered:
// NO-HOST-NEXT:   'qnn.resize' (layer 'up'): no NPU instruction (host=all runs it on the host)
// NO-HOST-NOT:  error

// Nearest 2x with the corpus models' attributes (asymmetric, floor): one move from a view of the
// input that repeats each row and column (stride 0), as Ethos-U's IFM upscaling reads it.
// CHECK:       layers ["up"]
// CHECK-NEXT:  %0 = npu.move ifm <"mutable", 0, [1, 2, 3, 2, 4, 2], [24, 12, 4, 0, 1, 0], i8> ofm <"mutable", 64, [1, 2, 6, 8], i8> {layer = 0 : i64}
// CHECK-NEXT:  }
// TILED:       %0 = npu.move ifm <"mutable", 0, [1, 2, 3, 2, 4, 2], [24, 12, 4, 0, 1, 0], i8> ofm <"mutable", 64, [1, 2, 6, 8], i8> {layer = 0 : i64}

func.func @main(%x: tensor<1x2x3x4x!qnn.uniform<i8:f32, 0.05:-3>> {nn.name = "x"}) -> (tensor<1x2x6x8x!qnn.uniform<i8:f32, 0.05:-3>> {nn.name = "y"}) {
  %y = qnn.resize %x {scales = array<f32: 1.0, 1.0, 2.0, 2.0>, coordinate_mode = "asymmetric", nearest_mode = "floor", name = "up"} : (tensor<1x2x3x4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x2x6x8x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return %y : tensor<1x2x6x8x!qnn.uniform<i8:f32, 0.05:-3>>
}

// -----

// Bilinear 2x with half-pixel centres: per output phase, the corners are moves, the borders
// and the inside depthwise convolutions without padding on input slices, writing every other
// output element. Weights (1, 3) x (1, 3) / 16 inside: bias_scale rows (0, 1, 4, 0).
// CHECK:       layers ["up"]
// CHECK-NEXT:  %0 = npu.move ifm <"mutable", 0, [1, 2, 1, 1], [24, 12, 4, 1], i8> ofm <"mutable", 64, [1, 2, 1, 1], [96, 48, 16, 2], i8>
// CHECK-NEXT:  %1 = npu.conv2d ifm <"mutable", 0, [1, 2, 1, 4], [24, 12, 4, 1], i8> weights <"constants", 0, [2, 1, 1, 2], i8> bias_scale <"constants", 64, [2, 4], i32> ofm <"mutable", 66, [1, 2, 1, 3], [96, 48, 16, 2], i8> {groups = 2 : i64, layer = 0 : i64}
// CHECK:       %5 = npu.conv2d ifm <"mutable", 0, [1, 2, 3, 4], i8> weights <"constants", 192, [2, 1, 2, 2], i8> bias_scale <"constants", 256, [2, 4], i32> ofm <"mutable", 82, [1, 2, 2, 3], [96, 48, 16, 2], i8> {groups = 2 : i64, layer = 0 : i64}
// CHECK:       %15 = npu.move
// CHECK-NEXT:  }

func.func @main(%x: tensor<1x2x3x4x!qnn.uniform<i8:f32, 0.05:-3>> {nn.name = "x"}) -> (tensor<1x2x6x8x!qnn.uniform<i8:f32, 0.05:-3>> {nn.name = "y"}) {
  %y = qnn.resize_bilinear %x {half_pixel_centers = true, name = "up"} : (tensor<1x2x3x4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x2x6x8x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return %y : tensor<1x2x6x8x!qnn.uniform<i8:f32, 0.05:-3>>
}

// -----

// A ratio the moves and convolutions cannot express runs on the host.
// CHECK:       layers ["up"]
// CHECK-NEXT:  npu.host

func.func @main(%x: tensor<1x2x5x5x!qnn.uniform<i8:f32, 0.05:-3>> {nn.name = "x"}) -> (tensor<1x2x7x7x!qnn.uniform<i8:f32, 0.05:-3>> {nn.name = "y"}) {
  %y = qnn.resize %x {scales = array<f32: 1.0, 1.0, 1.4, 1.4>, name = "up"} : (tensor<1x2x5x5x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x2x7x7x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return %y : tensor<1x2x7x7x!qnn.uniform<i8:f32, 0.05:-3>>
}

// RUN: npu-opt %s | npu-opt | filecheck %s
// RUN: npu-opt %s --print-op-generic | npu-opt | filecheck %s

// Round trip of every qnn op (custom and generic form): conversions, compute, data movement.

// CHECK-LABEL: func.func @conversions
// CHECK-NEXT:    %c = qnn.constant {value = dense<[[1, -2, 3, 127], [0, 5, -128, 9]]> : tensor<2x4xi8>, name = "w"} : tensor<2x4x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %u = qnn.constant {value = dense<[0, 128, 255]> : tensor<3xui8>} : tensor<3x!qnn.uniform<u8:f32, 0.1:128>>
// CHECK-NEXT:    %b = qnn.constant {value = dense<[-70000, 12, 0, 3]> : tensor<4xi32>} : tensor<4xi32>
// CHECK-NEXT:    %0 = qnn.quantize %f : (tensor<2x4xf32>) -> tensor<2x4x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %1 = qnn.quantize %f {rounding = "half_to_even", name = "q"} : (tensor<2x4xf32>) -> tensor<2x4x!qnn.uniform<u8:f32, 0.1:128>>
// CHECK-NEXT:    %2 = qnn.dequantize %x : (tensor<2x4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x4xf32>
// CHECK-NEXT:    %3 = qnn.requantize %x {multiplier = array<i64: 1518500250>, shift = array<i64: 30>} : (tensor<2x4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x4x!qnn.uniform<u8:f32, 0.1:128>>
// CHECK-NEXT:    %4 = qnn.requantize %x {multiplier = array<i64: 1073741824>, shift = array<i64: -2>, rounding = "tflite", clamp_min = 128 : i64, clamp_max = 200 : i64} : (tensor<2x4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x4x!qnn.uniform<u8:f32, 0.1:128>>
// CHECK-NEXT:    %5 = qnn.requantize %p {multiplier = array<i64: 1073741824, 1073741824, 1288490189, 2147483647>, shift = array<i64: 31, 30, 31, 32>, rounding = "half_to_even"} : (tensor<2x4x!qnn.uniform<i8:f32:1, {0.5, 0.25:1, 0.125:-2, 1.0}>>) -> tensor<2x4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
// CHECK-NEXT:    %6 = qnn.lut %x {table = dense<7> : tensor<256xi8>} : (tensor<2x4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x4x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    func.return
func.func @conversions(%f: tensor<2x4xf32>, %x: tensor<2x4x!qnn.uniform<i8:f32, 0.05:-3>>, %p: tensor<2x4x!qnn.uniform<i8:f32:1, {0.5, 0.25:1, 0.125:-2, 1.0}>>) {
  %c = qnn.constant {value = dense<[[1, -2, 3, 127], [0, 5, -128, 9]]> : tensor<2x4xi8>, name = "w"} : tensor<2x4x!qnn.uniform<i8:f32, 0.05:-3>>
  %u = qnn.constant {value = dense<[0, 128, 255]> : tensor<3xui8>} : tensor<3x!qnn.uniform<u8:f32, 0.1:128>>
  %b = qnn.constant {value = dense<[-70000, 12, 0, 3]> : tensor<4xi32>} : tensor<4xi32>
  %0 = qnn.quantize %f : (tensor<2x4xf32>) -> tensor<2x4x!qnn.uniform<i8:f32, 0.05:-3>>
  %1 = qnn.quantize %f {rounding = "half_to_even", name = "q"} : (tensor<2x4xf32>) -> tensor<2x4x!qnn.uniform<u8:f32, 0.1:128>>
  %2 = qnn.dequantize %x : (tensor<2x4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x4xf32>
  %3 = qnn.requantize %x {multiplier = array<i64: 1518500250>, shift = array<i64: 30>} : (tensor<2x4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x4x!qnn.uniform<u8:f32, 0.1:128>>
  %4 = qnn.requantize %x {multiplier = array<i64: 1073741824>, shift = array<i64: -2>, rounding = "tflite", clamp_min = 128 : i64, clamp_max = 200 : i64} : (tensor<2x4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x4x!qnn.uniform<u8:f32, 0.1:128>>
  %5 = qnn.requantize %p {multiplier = array<i64: 1073741824, 1073741824, 1288490189, 2147483647>, shift = array<i64: 31, 30, 31, 32>, rounding = "half_to_even"} : (tensor<2x4x!qnn.uniform<i8:f32:1, {0.5, 0.25:1, 0.125:-2, 1.0}>>) -> tensor<2x4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  %6 = qnn.lut %x {table = dense<7> : tensor<256xi8>} : (tensor<2x4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<2x4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}

// CHECK-LABEL: func.func @compute
// CHECK-NEXT:    %0 = qnn.conv2d %x, %w, %b {strides = array<i64: 2, 1>, pads = array<i64: 1, 1, 1, 0>, dilations = array<i64: 1, 2>, groups = 2 : i64, multiplier = array<i64: 1073741824, 1073741825, 1073741826, 1073741827>, shift = array<i64: 36, 36, 37, 37>, name = "conv"} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<4x2x3x3x!qnn.uniform<i8<-127:127>:f32:0, {0.01, 0.02, 0.03, 0.04}>>, tensor<4xi32>) -> tensor<1x4x4x5x!qnn.uniform<u8:f32, 0.1:128>>
// CHECK-NEXT:    %1 = qnn.conv2d %x, %dw {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 4 : i64, multiplier = array<i64: 1431655765>, shift = array<i64: 35>, rounding = "tflite", clamp_min = -3 : i64} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<4x1x3x3x!qnn.uniform<i8:f32, 0.02>>) -> tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %2 = qnn.fully_connected %v, %fw, %b {multiplier = array<i64: 1234567890>, shift = array<i64: 33>} : (tensor<2x16x!qnn.uniform<u8:f32, 0.1:128>>, tensor<4x16x!qnn.uniform<u8:f32, 0.03:120>>, tensor<4xi32>) -> tensor<2x4x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %3 = qnn.fully_connected %v, %fw {multiplier = array<i64: 1234567890>, shift = array<i64: 33>, clamp_min = 0 : i64, clamp_max = 100 : i64} : (tensor<2x16x!qnn.uniform<u8:f32, 0.1:128>>, tensor<4x16x!qnn.uniform<u8:f32, 0.03:120>>) -> tensor<2x4x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %4 = qnn.matmul %m, %r {multiplier = array<i64: 1073741824>, shift = array<i64: 40>} : (tensor<3x2x16x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<16x4x!qnn.uniform<u8:f32, 0.1:128>>) -> tensor<3x2x4x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %5 = qnn.add %x, %x {left_shift = 20 : i64, lhs_multiplier = 1073741824 : i64, lhs_shift = 31 : i64, rhs_multiplier = 1073741824 : i64, rhs_shift = 31 : i64, multiplier = array<i64: 1073741824>, shift = array<i64: 50>} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %6 = qnn.sub %v, %v {left_shift = 20 : i64, lhs_multiplier = 1073741824 : i64, lhs_shift = 31 : i64, rhs_multiplier = 1500000000 : i64, rhs_shift = 32 : i64, multiplier = array<i64: 1073741824>, shift = array<i64: 50>, rounding = "tflite", name = "sub"} : (tensor<2x16x!qnn.uniform<u8:f32, 0.1:128>>, tensor<2x16x!qnn.uniform<u8:f32, 0.1:128>>) -> tensor<2x16x!qnn.uniform<u8:f32, 0.1:128>>
// CHECK-NEXT:    %7 = qnn.mul %m, %v {multiplier = array<i64: 1073741824>, shift = array<i64: 31>} : (tensor<3x2x16x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x16x!qnn.uniform<u8:f32, 0.1:128>>) -> tensor<3x2x16x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %8 = qnn.avg_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = true, multiplier = array<i64: 1073741824>, shift = array<i64: 30>} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %9 = qnn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true, multiplier = array<i64: 1073741824>, shift = array<i64: 30>} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x4x4x!qnn.uniform<u8:f32, 0.1:128>>
// CHECK-NEXT:    %10 = qnn.global_avg_pool %x {multiplier = array<i64: 1073741824>, shift = array<i64: 30>} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x1x1x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    func.return
func.func @compute(%x: tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>, %w: tensor<4x2x3x3x!qnn.uniform<i8<-127:127>:f32:0, {0.01, 0.02, 0.03, 0.04}>>, %dw: tensor<4x1x3x3x!qnn.uniform<i8:f32, 0.02>>, %b: tensor<4xi32>, %v: tensor<2x16x!qnn.uniform<u8:f32, 0.1:128>>, %fw: tensor<4x16x!qnn.uniform<u8:f32, 0.03:120>>, %m: tensor<3x2x16x!qnn.uniform<i8:f32, 0.05:-3>>, %r: tensor<16x4x!qnn.uniform<u8:f32, 0.1:128>>) {
  %0 = qnn.conv2d %x, %w, %b {strides = array<i64: 2, 1>, pads = array<i64: 1, 1, 1, 0>, dilations = array<i64: 1, 2>, groups = 2 : i64, multiplier = array<i64: 1073741824, 1073741825, 1073741826, 1073741827>, shift = array<i64: 36, 36, 37, 37>, name = "conv"} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<4x2x3x3x!qnn.uniform<i8<-127:127>:f32:0, {0.01, 0.02, 0.03, 0.04}>>, tensor<4xi32>) -> tensor<1x4x4x5x!qnn.uniform<u8:f32, 0.1:128>>
  %1 = qnn.conv2d %x, %dw {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 4 : i64, multiplier = array<i64: 1431655765>, shift = array<i64: 35>, rounding = "tflite", clamp_min = -3 : i64} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<4x1x3x3x!qnn.uniform<i8:f32, 0.02>>) -> tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>
  %2 = qnn.fully_connected %v, %fw, %b {multiplier = array<i64: 1234567890>, shift = array<i64: 33>} : (tensor<2x16x!qnn.uniform<u8:f32, 0.1:128>>, tensor<4x16x!qnn.uniform<u8:f32, 0.03:120>>, tensor<4xi32>) -> tensor<2x4x!qnn.uniform<i8:f32, 0.05:-3>>
  %3 = qnn.fully_connected %v, %fw {multiplier = array<i64: 1234567890>, shift = array<i64: 33>, clamp_min = 0 : i64, clamp_max = 100 : i64} : (tensor<2x16x!qnn.uniform<u8:f32, 0.1:128>>, tensor<4x16x!qnn.uniform<u8:f32, 0.03:120>>) -> tensor<2x4x!qnn.uniform<i8:f32, 0.05:-3>>
  %4 = qnn.matmul %m, %r {multiplier = array<i64: 1073741824>, shift = array<i64: 40>} : (tensor<3x2x16x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<16x4x!qnn.uniform<u8:f32, 0.1:128>>) -> tensor<3x2x4x!qnn.uniform<i8:f32, 0.05:-3>>
  %5 = qnn.add %x, %x {left_shift = 20 : i64, lhs_multiplier = 1073741824 : i64, lhs_shift = 31 : i64, rhs_multiplier = 1073741824 : i64, rhs_shift = 31 : i64, multiplier = array<i64: 1073741824>, shift = array<i64: 50>} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>
  %6 = qnn.sub %v, %v {left_shift = 20 : i64, lhs_multiplier = 1073741824 : i64, lhs_shift = 31 : i64, rhs_multiplier = 1500000000 : i64, rhs_shift = 32 : i64, multiplier = array<i64: 1073741824>, shift = array<i64: 50>, rounding = "tflite", name = "sub"} : (tensor<2x16x!qnn.uniform<u8:f32, 0.1:128>>, tensor<2x16x!qnn.uniform<u8:f32, 0.1:128>>) -> tensor<2x16x!qnn.uniform<u8:f32, 0.1:128>>
  %7 = qnn.mul %m, %v {multiplier = array<i64: 1073741824>, shift = array<i64: 31>} : (tensor<3x2x16x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x16x!qnn.uniform<u8:f32, 0.1:128>>) -> tensor<3x2x16x!qnn.uniform<i8:f32, 0.05:-3>>
  %8 = qnn.avg_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = true, multiplier = array<i64: 1073741824>, shift = array<i64: 30>} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>
  %9 = qnn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true, multiplier = array<i64: 1073741824>, shift = array<i64: 30>} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x4x4x!qnn.uniform<u8:f32, 0.1:128>>
  %10 = qnn.global_avg_pool %x {multiplier = array<i64: 1073741824>, shift = array<i64: 30>} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x1x1x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}

// CHECK-LABEL: func.func @movement
// CHECK-NEXT:    %0 = qnn.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %1 = qnn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 1>, ceil_mode = true} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x3x3x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %2 = qnn.global_max_pool %x : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x1x1x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %3 = qnn.reshape %x {name = "flat"} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x256x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %4 = qnn.reshape %w : (tensor<4x2x3x3x!qnn.uniform<i8<-127:127>:f32:0, {0.01, 0.02, 0.03, 0.04}>>) -> tensor<4x18x!qnn.uniform<i8<-127:127>:f32:0, {0.01, 0.02, 0.03, 0.04}>>
// CHECK-NEXT:    %5 = qnn.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x8x8x4x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %6 = qnn.concat %x, %y {axis = 1 : i64} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<1x2x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x6x8x8x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %7, %8 = qnn.split %x {axis = -1 : i64} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> (tensor<1x4x8x3x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<1x4x8x5x!qnn.uniform<i8:f32, 0.05:-3>>)
// CHECK-NEXT:    %9 = qnn.slice %x {starts = array<i64: 0, 3, 0, 7>, ends = array<i64: 1, 0, 8, -1>, steps = array<i64: 1, -1, 2, -3>} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x3x4x3x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %10 = qnn.pad %x {pads = array<i64: 0, 0, 1, 2, 0, 0, 1, 0>} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x10x10x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %11 = qnn.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, mode = "reflect", value = -128 : i64} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x10x10x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %12 = qnn.resize %x {scales = array<f32: 1.000000e+00, 1.000000e+00, 2.000000e+00, 1.500000e+00>, coordinate_mode = "asymmetric", nearest_mode = "floor"} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x16x12x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %13 = qnn.resize %x {scales = array<f32: 1.000000e+00, 1.000000e+00, 5.000000e-01, 5.000000e-01>} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %14 = qnn.depth_to_space %x {block_size = 2 : i64, mode = "CRD"} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x1x16x16x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    %15 = qnn.space_to_depth %x {block_size = 2 : i64} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x16x4x4x!qnn.uniform<i8:f32, 0.05:-3>>
// CHECK-NEXT:    func.return
func.func @movement(%x: tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>, %y: tensor<1x2x8x8x!qnn.uniform<i8:f32, 0.05:-3>>, %w: tensor<4x2x3x3x!qnn.uniform<i8<-127:127>:f32:0, {0.01, 0.02, 0.03, 0.04}>>) {
  %0 = qnn.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>
  %1 = qnn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 1>, ceil_mode = true} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x3x3x!qnn.uniform<i8:f32, 0.05:-3>>
  %2 = qnn.global_max_pool %x : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x1x1x!qnn.uniform<i8:f32, 0.05:-3>>
  %3 = qnn.reshape %x {name = "flat"} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x256x!qnn.uniform<i8:f32, 0.05:-3>>
  %4 = qnn.reshape %w : (tensor<4x2x3x3x!qnn.uniform<i8<-127:127>:f32:0, {0.01, 0.02, 0.03, 0.04}>>) -> tensor<4x18x!qnn.uniform<i8<-127:127>:f32:0, {0.01, 0.02, 0.03, 0.04}>>
  %5 = qnn.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x8x8x4x!qnn.uniform<i8:f32, 0.05:-3>>
  %6 = qnn.concat %x, %y {axis = 1 : i64} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<1x2x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x6x8x8x!qnn.uniform<i8:f32, 0.05:-3>>
  %7, %8 = qnn.split %x {axis = -1 : i64} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> (tensor<1x4x8x3x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<1x4x8x5x!qnn.uniform<i8:f32, 0.05:-3>>)
  %9 = qnn.slice %x {starts = array<i64: 0, 3, 0, 7>, ends = array<i64: 1, 0, 8, -1>, steps = array<i64: 1, -1, 2, -3>} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x3x4x3x!qnn.uniform<i8:f32, 0.05:-3>>
  %10 = qnn.pad %x {pads = array<i64: 0, 0, 1, 2, 0, 0, 1, 0>} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x10x10x!qnn.uniform<i8:f32, 0.05:-3>>
  %11 = qnn.pad %x {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, mode = "reflect", value = -128 : i64} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x10x10x!qnn.uniform<i8:f32, 0.05:-3>>
  %12 = qnn.resize %x {scales = array<f32: 1.0, 1.0, 2.0, 1.5>, coordinate_mode = "asymmetric", nearest_mode = "floor"} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x16x12x!qnn.uniform<i8:f32, 0.05:-3>>
  %13 = qnn.resize %x {scales = array<f32: 1.0, 1.0, 0.5, 0.5>} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x4x4x4x!qnn.uniform<i8:f32, 0.05:-3>>
  %14 = qnn.depth_to_space %x {block_size = 2 : i64, mode = "CRD"} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x1x16x16x!qnn.uniform<i8:f32, 0.05:-3>>
  %15 = qnn.space_to_depth %x {block_size = 2 : i64} : (tensor<1x4x8x8x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<1x16x4x4x!qnn.uniform<i8:f32, 0.05:-3>>
  func.return
}

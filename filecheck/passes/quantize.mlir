// RUN: echo '{"cx": [-8, 7.9375], "conv": [-20, 20], "crelu": [0, 15.9375], "px": [-7.9375, 7.9375], "pconv": [0, 7.9375], "ax": [-8, 7.9375], "ay": [-16, 15.875], "add": [-32, 31.75], "lx": [-8, 7.9375], "sig": [0, 1], "sx": [-8, 7.9375], "sa": [-16, 15.875], "sm": [0, 1], "sb": [0, 1], "kx": [-1, 1], "k1": [-1, 1], "k2": [-2, 2], "cat": [-2, 2], "qx": [-1, 1], "q1": [-0.5, 0.5], "qcat": [-1, 1], "rx": [-8, 7.9375], "relu6": [0, 6], "mx": [-8, 7.9375], "mpool": [-4, 4], "mt": [-4, 4], "mr": [-4, 4], "mpad": [-4, 4], "fx": [-1, 1], "f1": [-2, 2], "f2": [-4, 4], "f3": [-8, 8]}' > %t.json
// RUN: npu-opt %s --split-input-file -p 'quantize{ranges="%t.json"}' | filecheck %s
// RUN: npu-opt %s --split-input-file -p 'quantize{ranges="%t.json" scheme="int8"}' | filecheck %s --check-prefix=INT8
// RUN: npu-opt %s --split-input-file -p 'quantize{ranges="%t.json" scheme="uint8"}' | filecheck %s --check-prefix=U8
// RUN: npu-opt %s --split-input-file -p 'quantize{ranges="%t.json" scheme="pow2"}' | filecheck %s --check-prefix=POW2
// RUN: npu-opt %s --split-input-file -p 'quantize{ranges="%t.json" scheme="int16"}' | filecheck %s --check-prefix=I16
// RUN: npu-opt %s --split-input-file -p 'quantize{ranges="%t.json" io="quantized"}' | filecheck %s --check-prefix=IOQ
// RUN: npu-opt %s --split-input-file -p 'quantize{ranges="%t.json" layers="nn.mul:16"}' | filecheck %s --check-prefix=MIX16
// RUN: npu-opt %s --split-input-file -p 'quantize{ranges="%t.json" layers="nn.mul:float"}' | filecheck %s --check-prefix=MIXF

// Formulas: docs/quantization.md ("Schemes"). quantize_multiplier(M) = (m0, shift) with
// M = f * 2^e, f in [0.5, 1), m0 = round(f * 2^31), shift = 31 - e.
//
// int8-per-channel (default): cx [-8, 7.9375] -> i8 asymmetric, scale 15.9375 / 255 =
// 0.0625, zero point round(-128 + 8 / 0.0625) = 0. The relu folds into the conv's clamp,
// whose output takes the relu's range [0, 15.9375]: scale 0.0625, zero point -128, and
// clamp_min = zero point. Weights per output channel, symmetric on [-127, 127]:
// absmax [1, 0.5] -> scales 1/127, 0.5/127; w / scale = [127, -63.5 -> -64], [63.5 -> 64, 127].
// Bias at 0.0625 * scale_w: 0.5 / (0.0625/127) = 1016, -0.25 / (0.0625*0.5/127) = -1016.
// M = 0.0625 * scale_w / 0.0625 = 1/127 -> (1082196484, 37), 0.5/127 -> (1082196484, 38).
// CHECK-LABEL: func.func @conv_relu
// CHECK-SAME:      (%x: tensor<1x2x3x3xf32> {nn.name = "cx"}) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    %[[X:.*]] = qnn.quantize %x : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3x!qnn.uniform<i8:f32, 0.0625>>
// CHECK-NEXT:    %[[W:.*]] = qnn.constant {value = dense<{{\[\[\[\[}}127]], {{\[\[}}-64]]], {{\[\[\[}}64]], {{\[\[}}127]]]]> : tensor<2x2x1x1xi8>, name = "conv.weight"} : tensor<2x2x1x1x!qnn.uniform<i8<-127:127>:f32:0, {0.007874015748031496, 0.003937007874015748}>>
// CHECK-NEXT:    %[[B:.*]] = qnn.constant {value = dense<[1016, -1016]> : tensor<2xi32>, name = "conv.bias"} : tensor<2xi32>
// CHECK-NEXT:    %[[C:.*]] = qnn.conv2d %[[X]], %[[W]], %[[B]] {{{.*}}name = "conv", multiplier = array<i64: 1082196484, 1082196484>, shift = array<i64: 37, 38>, clamp_min = -128 : i64}
// CHECK-SAME:      -> tensor<1x2x3x3x!qnn.uniform<i8:f32, 0.0625:-128>>
// CHECK-NEXT:    %[[Y:.*]] = qnn.dequantize %[[C]] : (tensor<1x2x3x3x!qnn.uniform<i8:f32, 0.0625:-128>>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    func.return %[[Y]]
// CHECK-NOT:     nn.relu
//
// int8: one weight scale, absmax 1 -> 1/127: [127, -64, 32 (31.75), 64]; bias 0.5 and
// -0.25 over 0.0625/127 -> 1016, -508; one multiplier 1/127.
// INT8-LABEL: func.func @conv_relu
// INT8:         qnn.constant {value = dense<{{\[\[\[\[}}127]], {{\[\[}}-64]]], {{\[\[\[}}32]], {{\[\[}}64]]]]> : tensor<2x2x1x1xi8>, name = "conv.weight"} : tensor<2x2x1x1x!qnn.uniform<i8<-127:127>:f32, 0.007874015748031496>>
// INT8-NEXT:    qnn.constant {value = dense<[1016, -508]> : tensor<2xi32>, name = "conv.bias"}
// INT8-NEXT:    qnn.conv2d {{.*}}multiplier = array<i64: 1082196484>, shift = array<i64: 37>, clamp_min = -128 : i64}
//
// uint8: cx -> u8 scale 0.0625, zero point 0 + 8 / 0.0625 = 128; relu output [0, 15.9375]
// -> scale 0.0625, zero point 0. Weights per tensor, asymmetric u8: [-0.5, 1] -> scale
// 1.5 / 255, zero point 0.5 / scale = 85; w -> [255, 0, 128 (42.5 + 85 = 127.5), 170].
// Bias: 0.5 / (0.0625 * 1.5/255) = 1360, -680. M = 1.5/255 -> (1616928864, 38).
// U8-LABEL: func.func @conv_relu
// U8-NEXT:    qnn.quantize %x : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3x!qnn.uniform<u8:f32, 0.0625:128>>
// U8-NEXT:    qnn.constant {value = dense<{{\[\[\[\[}}255]], {{\[\[}}0]]], {{\[\[\[}}128]], {{\[\[}}170]]]]> : tensor<2x2x1x1xui8>, name = "conv.weight"} : tensor<2x2x1x1x!qnn.uniform<u8:f32, 0.0058823529411764705:85>>
// U8-NEXT:    qnn.constant {value = dense<[1360, -680]> : tensor<2xi32>
// U8-NEXT:    qnn.conv2d {{.*}}multiplier = array<i64: 1616928864>, shift = array<i64: 38>, clamp_min = 0 : i64}
// U8-SAME:      -> tensor<1x2x3x3x!qnn.uniform<u8:f32, 0.0625>>
//
// int16 (16x8): cx -> i16 symmetric, scale 8 / 32767; relu output 15.9375 / 32767; int8
// per-channel weights as above. Bias 0.5 / (8/32767 / 127) = 260088.06 -> 260088.
// I16-LABEL: func.func @conv_relu
// I16-NEXT:    qnn.quantize %x : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3x!qnn.uniform<i16:f32, 0.00024414807580797754>>
// I16-NEXT:    qnn.constant {{.*}} : tensor<2x2x1x1x!qnn.uniform<i8<-127:127>:f32:0, {0.007874015748031496, 0.003937007874015748}>>
// I16-NEXT:    qnn.constant {value = dense<[260088, -260088]> : tensor<2xi32>
// I16-NEXT:    qnn.conv2d {{.*}}multiplier = array<i64: 1086440392, 1086440392>, shift = array<i64: 38, 39>, clamp_min = 0 : i64}
// I16-SAME:      -> tensor<1x2x3x3x!qnn.uniform<i16:f32, 0.00048638874477370525>>
func.func @conv_relu(%x: tensor<1x2x3x3xf32> {nn.name = "cx"}) -> tensor<1x2x3x3xf32> {
  %w = nn.constant dense<[[[[1.0]], [[-0.5]]], [[[0.25]], [[0.5]]]]> : tensor<2x2x1x1xf32> {name = "conv.weight"}
  %b = nn.constant dense<[0.5, -0.25]> : tensor<2xf32> {name = "conv.bias"}
  %0 = nn.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, name = "conv"} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %1 = nn.relu %0 {name = "crelu"} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  func.return %1 : tensor<1x2x3x3xf32>
}

// -----

// pow2: every scale a power of two. px absmax 7.9375 / 127 = 2^-4; weight absmax 1 / 127
// rounds up to 2^-6, so w -> [64, -32, 16, 32]; bias 0.5 / 2^-10 = 512, -256; the fused
// relu6 clamps at 6 / 2^-4 = 96. M = 2^-4 * 2^-6 / 2^-4 = 2^-6 -> (2^30, 36).
// POW2-LABEL: func.func @conv_pow2
// POW2-NEXT:    qnn.quantize %x : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3x!qnn.uniform<i8:f32, 0.0625>>
// POW2-NEXT:    qnn.constant {value = dense<{{\[\[\[\[}}64]], {{\[\[}}-32]]], {{\[\[\[}}16]], {{\[\[}}32]]]]> : tensor<2x2x1x1xi8>} : tensor<2x2x1x1x!qnn.uniform<i8<-127:127>:f32, 0.015625>>
// POW2-NEXT:    qnn.constant {value = dense<[512, -256]> : tensor<2xi32>} : tensor<2xi32>
// POW2-NEXT:    qnn.conv2d {{.*}}name = "pconv", multiplier = array<i64: 1073741824>, shift = array<i64: 36>, clamp_min = 0 : i64, clamp_max = 96 : i64}
// POW2-SAME:      -> tensor<1x2x3x3x!qnn.uniform<i8:f32, 0.0625>>
func.func @conv_pow2(%x: tensor<1x2x3x3xf32> {nn.name = "px"}) -> tensor<1x2x3x3xf32> {
  %w = nn.constant dense<[[[[1.0]], [[-0.5]]], [[[0.25]], [[0.5]]]]> : tensor<2x2x1x1xf32>
  %b = nn.constant dense<[0.5, -0.25]> : tensor<2xf32>
  %0 = nn.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, activation = "clip", activation_min = 0.0 : f32, activation_max = 6.0 : f32, name = "pconv"} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %0 : tensor<1x2x3x3xf32>
}

// -----

// qnn.add with TFLite's derivation: sa = 0.0625, sb = 0.125, sout = 0.25, left_shift 20;
// twice_max = 0.25: lhs 0.0625 / 0.25 = 2^-2 -> (2^30, 32), rhs 2^-1 -> (2^30, 31),
// out 0.25 / (2^20 * 0.25) = 2^-20 -> (2^30, 50). int16: left_shift 15, out 2^-15 -> shift 45.
// CHECK-LABEL: func.func @residual_add
// CHECK-NEXT:    %[[A:.*]] = qnn.quantize %x : (tensor<1x4xf32>) -> tensor<1x4x!qnn.uniform<i8:f32, 0.0625>>
// CHECK-NEXT:    %[[B:.*]] = qnn.quantize %y : (tensor<1x4xf32>) -> tensor<1x4x!qnn.uniform<i8:f32, 0.125>>
// CHECK-NEXT:    %[[S:.*]] = qnn.add %[[A]], %[[B]] {name = "add", multiplier = array<i64: 1073741824>, shift = array<i64: 50>, left_shift = 20 : i64, lhs_multiplier = 1073741824 : i64, lhs_shift = 32 : i64, rhs_multiplier = 1073741824 : i64, rhs_shift = 31 : i64}
// CHECK-SAME:      -> tensor<1x4x!qnn.uniform<i8:f32, 0.25>>
// CHECK-NEXT:    qnn.dequantize %[[S]]
// I16-LABEL: func.func @residual_add
// I16:         qnn.add {{.*}}multiplier = array<i64: 1073741824>, shift = array<i64: 45>, left_shift = 15 : i64, lhs_multiplier = 1073741824 : i64, lhs_shift = 32 : i64, rhs_multiplier = 1073741824 : i64, rhs_shift = 31 : i64}
// I16-SAME:      (tensor<1x4x!qnn.uniform<i16:f32, 0.00024414807580797754>>, tensor<1x4x!qnn.uniform<i16:f32, 0.0004882961516159551>>) -> tensor<1x4x!qnn.uniform<i16:f32, 0.0009765923032319102>>
// io=quantized: the signature carries the quantized types; no conversions remain.
// IOQ-LABEL: func.func @residual_add
// IOQ-SAME:      (%x: tensor<1x4x!qnn.uniform<i8:f32, 0.0625>> {nn.name = "ax"}, %y: tensor<1x4x!qnn.uniform<i8:f32, 0.125>> {nn.name = "ay"}) -> tensor<1x4x!qnn.uniform<i8:f32, 0.25>>
// IOQ-NEXT:      %[[S:.*]] = qnn.add %x, %y
// IOQ-NEXT:      func.return %[[S]] : tensor<1x4x!qnn.uniform<i8:f32, 0.25>>
func.func @residual_add(%x: tensor<1x4xf32> {nn.name = "ax"}, %y: tensor<1x4xf32> {nn.name = "ay"}) -> tensor<1x4xf32> {
  %0 = nn.add %x, %y {name = "add"} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %0 : tensor<1x4xf32>
}

// -----

// Sigmoid becomes a 256-entry LUT from the input type to the output's [0, 1]: scale
// 1/255, zero point -128; code -128 (x = -8) maps to sigmoid(-8) / (1/255) - 128 = -128
// (0x80), code 127 (x = 7.9375) to 127 (0x7F). At 16 bits it stays float.
// CHECK-LABEL: func.func @sigmoid
// CHECK-NEXT:    %[[X:.*]] = qnn.quantize %x
// CHECK-NEXT:    %[[L:.*]] = qnn.lut %[[X]] {table = dense<"0x80{{[0-9A-F]*}}7F"> : tensor<256xi8>, name = "sig"} : (tensor<1x4x!qnn.uniform<i8:f32, 0.0625>>) -> tensor<1x4x!qnn.uniform<i8:f32, 0.00392156862745098:-128>>
// CHECK-NEXT:    qnn.dequantize %[[L]]
// I16-LABEL: func.func @sigmoid
// I16-NEXT:    nn.sigmoid %x {name = "sig"}
// I16-NEXT:    func.return
func.func @sigmoid(%x: tensor<1x4xf32> {nn.name = "lx"}) -> tensor<1x4xf32> {
  %0 = nn.sigmoid %x {name = "sig"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %0 : tensor<1x4xf32>
}

// -----

// Softmax over the last axis becomes qnn.softmax (TFLite's int8 algorithm). The input scale
// 0.125 gives 0.125 * 2^26 = 2^23: input_multiplier 2^30, input_left_shift 24, and
// diff_min = -floor(31 * 2^26 / 2^24) = -124. The result is fixed at scale 1/256, zero point
// -128; sb's mul of two such values into [0, 1] (scale 1/255) rescales by
// 255 / 65536 = 0.99609375 * 2^-8: multiplier 2139095040, shift 39.
// CHECK-LABEL: func.func @softmax
// CHECK:         %[[A:.*]] = qnn.add {{.*}}name = "sa"
// CHECK-NEXT:    %[[S:.*]] = qnn.softmax %[[A]] {name = "sm", input_multiplier = 1073741824 : i64, input_left_shift = 24 : i64, diff_min = -124 : i64} : (tensor<1x4x!qnn.uniform<i8:f32, 0.125>>) -> tensor<1x4x!qnn.uniform<i8:f32, 0.00390625:-128>>
// CHECK-NEXT:    qnn.mul %[[S]], %[[S]] {name = "sb", multiplier = array<i64: 2139095040>, shift = array<i64: 39>}
func.func @softmax(%x: tensor<1x4xf32> {nn.name = "sx"}) -> tensor<1x4xf32> {
  %0 = nn.add %x, %x {name = "sa"} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  %1 = nn.softmax %0 {axis = 1 : i64, name = "sm"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %2 = nn.mul %1, %1 {name = "sb"} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %2 : tensor<1x4xf32>
}

// -----

// Concat inputs share one type covering all of them ([-2, 2]: scale 4/255, zero point
// round(-128 + 127.5) = -1): both convs emit it directly, the graph input is quantized
// straight to it; no qnn.requantize.
// CHECK-LABEL: func.func @concat
// CHECK:         %[[K1:.*]] = qnn.conv2d {{.*}}name = "k1"{{.*}} -> tensor<1x1x2x2x!qnn.uniform<i8:f32, 0.01568627450980392:-1>>
// CHECK:         %[[K2:.*]] = qnn.conv2d {{.*}}name = "k2"{{.*}} -> tensor<1x1x2x2x!qnn.uniform<i8:f32, 0.01568627450980392:-1>>
// CHECK-NEXT:    %[[X:.*]] = qnn.quantize %x : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2x!qnn.uniform<i8:f32, 0.01568627450980392:-1>>
// CHECK-NEXT:    qnn.concat %[[K1]], %[[K2]], %[[X]] {axis = 1 : i64, name = "cat"}
// CHECK-NOT:     qnn.requantize
func.func @concat(%x: tensor<1x1x2x2xf32> {nn.name = "kx"}) -> tensor<1x3x2x2xf32> {
  %w1 = nn.constant dense<1.0> : tensor<1x1x1x1xf32>
  %w2 = nn.constant dense<-2.0> : tensor<1x1x1x1xf32>
  %0 = nn.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, name = "k1"} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32>
  %1 = nn.conv2d %x, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, name = "k2"} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32>
  %2 = nn.concat %0, %1, %x {axis = 1 : i64, name = "cat"} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x3x2x2xf32>
  func.return %2 : tensor<1x3x2x2xf32>
}

// -----

// A producer with another user keeps its own type: the concat input is requantized
// (scale 1/255 -> 2/255: M = 1/2 -> (2^30, 31)).
// CHECK-LABEL: func.func @concat_shared_producer
// CHECK:         %[[Q1:.*]] = qnn.conv2d {{.*}}name = "q1"{{.*}} -> tensor<1x1x2x2x!qnn.uniform<i8:f32, 0.00392156862745098:-1>>
// CHECK-NEXT:    %[[R:.*]] = qnn.requantize %[[Q1]] {multiplier = array<i64: 1073741824>, shift = array<i64: 31>} : (tensor<1x1x2x2x!qnn.uniform<i8:f32, 0.00392156862745098:-1>>) -> tensor<1x1x2x2x!qnn.uniform<i8:f32, 0.00784313725490196:-1>>
// CHECK-NEXT:    qnn.concat %[[R]], %{{.*}} {axis = 1 : i64, name = "qcat"}
func.func @concat_shared_producer(%x: tensor<1x1x2x2xf32> {nn.name = "qx"}) -> (tensor<1x2x2x2xf32>, tensor<1x1x2x2xf32>) {
  %w = nn.constant dense<1.0> : tensor<1x1x1x1xf32>
  %0 = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, name = "q1"} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32>
  %1 = nn.concat %0, %x {axis = 1 : i64, name = "qcat"} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32>
  func.return %1, %0 : tensor<1x2x2x2xf32>, tensor<1x1x2x2xf32>
}

// -----

// A clip with no producer to fold into: qnn.requantize with the identity multiplier
// (2^30 * 2^-30) and the clamp [0, 6 / 0.0625 = 96] in the input's type.
// CHECK-LABEL: func.func @relu_input
// CHECK-NEXT:    %[[X:.*]] = qnn.quantize %x : (tensor<1x4xf32>) -> tensor<1x4x!qnn.uniform<i8:f32, 0.0625>>
// CHECK-NEXT:    qnn.requantize %[[X]] {name = "relu6", multiplier = array<i64: 1073741824>, shift = array<i64: 30>, clamp_min = 0 : i64, clamp_max = 96 : i64} : (tensor<1x4x!qnn.uniform<i8:f32, 0.0625>>) -> tensor<1x4x!qnn.uniform<i8:f32, 0.0625>>
func.func @relu_input(%x: tensor<1x4xf32> {nn.name = "rx"}) -> tensor<1x4xf32> {
  %0 = nn.clip %x {min = 0.0 : f32, max = 6.0 : f32, name = "relu6"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %0 : tensor<1x4xf32>
}

// -----

// Movement ops keep their input's type (their own ranges are not used); pad pads with
// the zero point.
// U8-LABEL: func.func @movement
// U8-NEXT:    qnn.quantize %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4x!qnn.uniform<u8:f32, 0.0625:128>>
// U8-NEXT:    qnn.max_pool2d {{.*}}name = "mpool"} : (tensor<1x2x4x4x!qnn.uniform<u8:f32, 0.0625:128>>) -> tensor<1x2x2x2x!qnn.uniform<u8:f32, 0.0625:128>>
// U8-NEXT:    qnn.transpose {{.*}} -> tensor<1x2x2x2x!qnn.uniform<u8:f32, 0.0625:128>>
// U8-NEXT:    qnn.reshape {{.*}} -> tensor<4x2x!qnn.uniform<u8:f32, 0.0625:128>>
// U8-NEXT:    qnn.pad {{.*}}value = 128 : i64} : {{.*}} -> tensor<4x10x!qnn.uniform<u8:f32, 0.0625:128>>
// U8-NEXT:    qnn.dequantize
func.func @movement(%x: tensor<1x2x4x4xf32> {nn.name = "mx"}) -> tensor<4x10xf32> {
  %0 = nn.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, name = "mpool"} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %1 = nn.transpose %0 {perm = array<i64: 0, 2, 3, 1>, name = "mt"} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %2 = nn.reshape %1 {name = "mr"} : (tensor<1x2x2x2xf32>) -> tensor<4x2xf32>
  %3 = nn.pad %2 {pads = array<i64: 0, 4, 0, 4>, name = "mpad"} : (tensor<4x2xf32>) -> tensor<4x10xf32>
  func.return %3 : tensor<4x10xf32>
}

// -----

// Mixed precision. All 8-bit by default; with nn.mul at 16 bits, f1's output
// (4/255) is requantized to i16 at its own range (2 / 32767: M = (4/255) / (2/32767) ->
// (1077919680, 22)), the constant 2.0 is stored as i16 32767, and the result goes back to
// f2's 8-bit type for f3 (M = (4/32767) / (8/255) -> (2139160322, 39)). f1 and f3 do not change.
// MIX16-LABEL: func.func @mixed
// MIX16:         %[[F1:.*]] = qnn.fully_connected {{.*}}name = "f1"{{.*}} -> tensor<1x4x!qnn.uniform<i8:f32, 0.01568627450980392:-1>>
// MIX16-NEXT:    %[[R1:.*]] = qnn.requantize %[[F1]] {multiplier = array<i64: 1077919680>, shift = array<i64: 22>} : ({{.*}}) -> tensor<1x4x!qnn.uniform<i16:f32, 6.103701895199438e-05>>
// MIX16-NEXT:    %[[C:.*]] = qnn.constant {value = dense<32767> : tensor<1xi16>} : tensor<1x!qnn.uniform<i16:f32, 6.103701895199438e-05>>
// MIX16-NEXT:    %[[M:.*]] = qnn.mul %[[R1]], %[[C]] {name = "f2", multiplier = array<i64: 1073774593>, shift = array<i64: 45>}
// MIX16-SAME:      -> tensor<1x4x!qnn.uniform<i16:f32, 0.00012207403790398877>>
// MIX16-NEXT:    %[[R2:.*]] = qnn.requantize %[[M]] {multiplier = array<i64: 2139160322>, shift = array<i64: 39>} : ({{.*}}) -> tensor<1x4x!qnn.uniform<i8:f32, 0.03137254901960784:-1>>
// MIX16-NEXT:    qnn.fully_connected %[[R2]], {{.*}}name = "f3"{{.*}}multiplier = array<i64: 1082196484, 1082196484, 1082196484, 1082196484>, shift = array<i64: 39, 39, 39, 39>}
// With nn.mul float, f2 runs on dequantized f1 and f3 quantizes f2's result to the same
// 8-bit type as before.
// MIXF-LABEL: func.func @mixed
// MIXF:         %[[F1:.*]] = qnn.fully_connected {{.*}}name = "f1"
// MIXF-NEXT:    %[[D:.*]] = qnn.dequantize %[[F1]]
// MIXF-NEXT:    %[[C:.*]] = nn.constant dense<2.000000e+00> : tensor<1xf32>
// MIXF-NEXT:    %[[M:.*]] = nn.mul %[[D]], %[[C]] {name = "f2"}
// MIXF-NEXT:    %[[Q:.*]] = qnn.quantize %[[M]] : (tensor<1x4xf32>) -> tensor<1x4x!qnn.uniform<i8:f32, 0.03137254901960784:-1>>
// MIXF-NEXT:    qnn.fully_connected %[[Q]], {{.*}}name = "f3"{{.*}}multiplier = array<i64: 1082196484, 1082196484, 1082196484, 1082196484>, shift = array<i64: 39, 39, 39, 39>}
func.func @mixed(%x: tensor<1x4xf32> {nn.name = "fx"}) -> tensor<1x4xf32> {
  %w = nn.constant dense<0.5> : tensor<4x4xf32>
  %c = nn.constant dense<2.0> : tensor<1xf32>
  %0 = nn.fully_connected %x, %w {name = "f1"} : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
  %1 = nn.mul %0, %c {name = "f2"} : (tensor<1x4xf32>, tensor<1xf32>) -> tensor<1x4xf32>
  %2 = nn.fully_connected %1, %w {name = "f3"} : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
  func.return %2 : tensor<1x4xf32>
}

// RUN: npu-opt %s | npu-opt | filecheck %s
// RUN: npu-opt %s --print-op-generic | npu-opt | filecheck %s

// Round trips of the 16-bit table ops (dialects/qnn_int16.py): TFLite's int16 LOGISTIC,
// TANH (qnn.sigmoid_lut) and SOFTMAX (qnn.softmax_lut). Verifier errors: invalid-int16-lut.mlir.

// CHECK-LABEL: func.func @sigmoid_lut
// CHECK-NEXT:    %0 = qnn.sigmoid_lut %x {function = "logistic", input_multiplier = 3 : i64, input_shift = 0 : i64, table = dense<32768> : tensor<256xi32>, name = "y"} : (tensor<2x8x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<2x8x!qnn.uniform<i16:f32, 3.0517578125e-05>>
// CHECK-NEXT:    %1 = qnn.sigmoid_lut %x {function = "tanh", input_multiplier = 16777 : i64, input_shift = 12 : i64, table = dense<65535> : tensor<256xi32>} : (tensor<2x8x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<2x8x!qnn.uniform<i16:f32, 3.0517578125e-05>>
// CHECK-NEXT:    func.return %0, %1
func.func @sigmoid_lut(%x: tensor<2x8x!qnn.uniform<i16:f32, 0.000244140625>>) -> (tensor<2x8x!qnn.uniform<i16:f32, 3.0517578125e-05>>, tensor<2x8x!qnn.uniform<i16:f32, 3.0517578125e-05>>) {
  %0 = qnn.sigmoid_lut %x {function = "logistic", input_multiplier = 3 : i64, input_shift = 0 : i64, table = dense<32768> : tensor<256xi32>, name = "y"} : (tensor<2x8x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<2x8x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  %1 = qnn.sigmoid_lut %x {function = "tanh", input_multiplier = 16777 : i64, input_shift = 12 : i64, table = dense<65535> : tensor<256xi32>} : (tensor<2x8x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<2x8x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return %0, %1 : tensor<2x8x!qnn.uniform<i16:f32, 3.0517578125e-05>>, tensor<2x8x!qnn.uniform<i16:f32, 3.0517578125e-05>>
}

// CHECK-LABEL: func.func @softmax_lut
// CHECK-NEXT:    %0 = qnn.softmax_lut %x {input_multiplier = 1759191844 : i64, input_shift = 28 : i64, exp_table = dense<2> : tensor<513xi16>, reciprocal_table = dense<-1> : tensor<513xi16>, name = "p"} : (tensor<3x5x!qnn.uniform<i16:f32, 0.001>>) -> tensor<3x5x!qnn.uniform<i16:f32, 3.0517578125e-05>>
// CHECK-NEXT:    %1 = qnn.softmax_lut %v {input_multiplier = 0 : i64, input_shift = 62 : i64, exp_table = dense<32767> : tensor<513xi16>, reciprocal_table = dense<-32768> : tensor<513xi16>} : (tensor<7x!qnn.uniform<i16:f32, 0.5>>) -> tensor<7x!qnn.uniform<i16:f32, 3.05e-05>>
// CHECK-NEXT:    func.return %0
func.func @softmax_lut(%x: tensor<3x5x!qnn.uniform<i16:f32, 0.001>>, %v: tensor<7x!qnn.uniform<i16:f32, 0.5>>) -> tensor<3x5x!qnn.uniform<i16:f32, 3.0517578125e-05>> {
  %0 = qnn.softmax_lut %x {input_multiplier = 1759191844 : i64, input_shift = 28 : i64, exp_table = dense<2> : tensor<513xi16>, reciprocal_table = dense<-1> : tensor<513xi16>, name = "p"} : (tensor<3x5x!qnn.uniform<i16:f32, 0.001>>) -> tensor<3x5x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  %1 = qnn.softmax_lut %v {input_multiplier = 0 : i64, input_shift = 62 : i64, exp_table = dense<32767> : tensor<513xi16>, reciprocal_table = dense<-32768> : tensor<513xi16>} : (tensor<7x!qnn.uniform<i16:f32, 0.5>>) -> tensor<7x!qnn.uniform<i16:f32, 3.05e-05>>
  func.return %0 : tensor<3x5x!qnn.uniform<i16:f32, 3.0517578125e-05>>
}

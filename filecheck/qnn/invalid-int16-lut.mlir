// RUN: npu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Verifier errors of qnn.sigmoid_lut and qnn.softmax_lut (dialects/qnn_int16.py).

func.func @sigmoid_function(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.sigmoid_lut %x {function = "relu", input_multiplier = 3 : i64, input_shift = 0 : i64, table = dense<32768> : tensor<256xi32>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.sigmoid_lut': function must be logistic or tanh

// -----

func.func @sigmoid_shift(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.sigmoid_lut %x {function = "tanh", input_multiplier = 3 : i64, input_shift = 32 : i64, table = dense<32768> : tensor<256xi32>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.sigmoid_lut': input_shift must be in [0, 31]

// -----

func.func @sigmoid_negative_shift(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.sigmoid_lut %x {function = "tanh", input_multiplier = 3 : i64, input_shift = -1 : i64, table = dense<32768> : tensor<256xi32>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.sigmoid_lut': input_shift must be in [0, 31]

// -----

func.func @sigmoid_zero_multiplier(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.sigmoid_lut %x {function = "logistic", input_multiplier = 0 : i64, input_shift = 0 : i64, table = dense<32768> : tensor<256xi32>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.sigmoid_lut': input_multiplier must be >= 1 with 2^15 * input_multiplier + 2^(input_shift - 1) < 2^31

// -----

func.func @sigmoid_multiplier_overflow(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.sigmoid_lut %x {function = "logistic", input_multiplier = 65536 : i64, input_shift = 0 : i64, table = dense<32768> : tensor<256xi32>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.sigmoid_lut': input_multiplier must be >= 1 with 2^15 * input_multiplier + 2^(input_shift - 1) < 2^31

// -----

func.func @sigmoid_rounding_overflow(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.sigmoid_lut %x {function = "logistic", input_multiplier = 32768 : i64, input_shift = 31 : i64, table = dense<32768> : tensor<256xi32>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.sigmoid_lut': input_multiplier must be >= 1 with 2^15 * input_multiplier + 2^(input_shift - 1) < 2^31

// -----

func.func @sigmoid_table_size(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.sigmoid_lut %x {function = "logistic", input_multiplier = 3 : i64, input_shift = 0 : i64, table = dense<32768> : tensor<255xi32>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.sigmoid_lut': the table must have 256 entries

// -----

func.func @sigmoid_table_float(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.sigmoid_lut %x {function = "logistic", input_multiplier = 3 : i64, input_shift = 0 : i64, table = dense<0.5> : tensor<256xf32>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.sigmoid_lut': the table must hold integers

// -----

func.func @sigmoid_table_range(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.sigmoid_lut %x {function = "logistic", input_multiplier = 3 : i64, input_shift = 0 : i64, table = dense<65536> : tensor<256xi32>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.sigmoid_lut': the table entries must lie in [0, 65535]

// -----

func.func @sigmoid_table_negative(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.sigmoid_lut %x {function = "logistic", input_multiplier = 3 : i64, input_shift = 0 : i64, table = dense<-1> : tensor<256xi32>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.sigmoid_lut': the table entries must lie in [0, 65535]

// -----

func.func @sigmoid_table_decreasing(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.sigmoid_lut %x {function = "logistic", input_multiplier = 3 : i64, input_shift = 0 : i64, table = dense<"0x409C0000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000080000000800000"> : tensor<256xi32>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.sigmoid_lut': the table must be nondecreasing

// -----

func.func @sigmoid_input_i8(%x: tensor<4x!qnn.uniform<i8:f32, 0.05>>) {
  %0 = qnn.sigmoid_lut %x {function = "logistic", input_multiplier = 3 : i64, input_shift = 0 : i64, table = dense<32768> : tensor<256xi32>} : (tensor<4x!qnn.uniform<i8:f32, 0.05>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.sigmoid_lut': the input must be full-range i16 with zero point 0

// -----

func.func @sigmoid_input_zero_point(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625:3>>) {
  %0 = qnn.sigmoid_lut %x {function = "logistic", input_multiplier = 3 : i64, input_shift = 0 : i64, table = dense<32768> : tensor<256xi32>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625:3>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.sigmoid_lut': the input must be full-range i16 with zero point 0

// -----

func.func @sigmoid_input_narrow(%x: tensor<4x!qnn.uniform<i16<-32767:32767>:f32, 0.000244140625>>) {
  %0 = qnn.sigmoid_lut %x {function = "logistic", input_multiplier = 3 : i64, input_shift = 0 : i64, table = dense<32768> : tensor<256xi32>} : (tensor<4x!qnn.uniform<i16<-32767:32767>:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.sigmoid_lut': the input must be full-range i16 with zero point 0

// -----

func.func @sigmoid_result_u16(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.sigmoid_lut %x {function = "logistic", input_multiplier = 3 : i64, input_shift = 0 : i64, table = dense<32768> : tensor<256xi32>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<u16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.sigmoid_lut': the result must be full-range i16 with zero point 0

// -----

func.func @sigmoid_result_scale(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.sigmoid_lut %x {function = "logistic", input_multiplier = 3 : i64, input_shift = 0 : i64, table = dense<32768> : tensor<256xi32>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 6.103515625e-05>>
  func.return
}
// CHECK: 'qnn.sigmoid_lut': the result scale must be 2^-15

// -----

func.func @sigmoid_per_axis(%x: tensor<2x!qnn.uniform<i16:f32:0, {0.1, 0.2}>>) {
  %0 = qnn.sigmoid_lut %x {function = "logistic", input_multiplier = 3 : i64, input_shift = 0 : i64, table = dense<32768> : tensor<256xi32>} : (tensor<2x!qnn.uniform<i16:f32:0, {0.1, 0.2}>>) -> tensor<2x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.sigmoid_lut': operands must be quantized per tensor

// -----

func.func @sigmoid_shape(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.sigmoid_lut %x {function = "logistic", input_multiplier = 3 : i64, input_shift = 0 : i64, table = dense<32768> : tensor<256xi32>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<2x2x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.sigmoid_lut': result shape must be 4, got 2x2

// -----

func.func @sigmoid_unknown_property(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.sigmoid_lut %x {function = "logistic", input_multiplier = 3 : i64, input_shift = 0 : i64, table = dense<32768> : tensor<256xi32>, input_left_shift = 1 : i64} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.sigmoid_lut': unknown properties input_left_shift

// -----

func.func @softmax_multiplier(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.softmax_lut %x {input_multiplier = 2147483648 : i64, input_shift = 28 : i64, exp_table = dense<2> : tensor<513xi16>, reciprocal_table = dense<-1> : tensor<513xi16>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.softmax_lut': input_multiplier must be in [0, 2^31)

// -----

func.func @softmax_shift_low(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.softmax_lut %x {input_multiplier = 1759191844 : i64, input_shift = 15 : i64, exp_table = dense<2> : tensor<513xi16>, reciprocal_table = dense<-1> : tensor<513xi16>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.softmax_lut': input_shift must be in [16, 62]

// -----

func.func @softmax_shift_high(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.softmax_lut %x {input_multiplier = 1759191844 : i64, input_shift = 63 : i64, exp_table = dense<2> : tensor<513xi16>, reciprocal_table = dense<-1> : tensor<513xi16>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.softmax_lut': input_shift must be in [16, 62]

// -----

func.func @softmax_exp_size(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.softmax_lut %x {input_multiplier = 1759191844 : i64, input_shift = 28 : i64, exp_table = dense<2> : tensor<512xi16>, reciprocal_table = dense<-1> : tensor<513xi16>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.softmax_lut': exp_table must have 513 entries

// -----

func.func @softmax_reciprocal_range(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.softmax_lut %x {input_multiplier = 1759191844 : i64, input_shift = 28 : i64, exp_table = dense<2> : tensor<513xi16>, reciprocal_table = dense<40000> : tensor<513xi32>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.softmax_lut': reciprocal_table entries must lie in [-32768, 32767]

// -----

func.func @softmax_table_float(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.softmax_lut %x {input_multiplier = 1759191844 : i64, input_shift = 28 : i64, exp_table = dense<2.0> : tensor<513xf32>, reciprocal_table = dense<-1> : tensor<513xi16>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.softmax_lut': exp_table must hold integers

// -----

func.func @softmax_scalar(%x: tensor<!qnn.uniform<i16:f32, 0.001>>) {
  %0 = qnn.softmax_lut %x {input_multiplier = 1759191844 : i64, input_shift = 28 : i64, exp_table = dense<2> : tensor<513xi16>, reciprocal_table = dense<-1> : tensor<513xi16>} : (tensor<!qnn.uniform<i16:f32, 0.001>>) -> tensor<!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.softmax_lut': the input must have rank >= 1

// -----

func.func @softmax_result_scale(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.softmax_lut %x {input_multiplier = 1759191844 : i64, input_shift = 28 : i64, exp_table = dense<2> : tensor<513xi16>, reciprocal_table = dense<-1> : tensor<513xi16>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.1e-05>>
  func.return
}
// CHECK: 'qnn.softmax_lut': the result scale must be 2^-15

// -----

func.func @softmax_result_zero_point(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.softmax_lut %x {input_multiplier = 1759191844 : i64, input_shift = 28 : i64, exp_table = dense<2> : tensor<513xi16>, reciprocal_table = dense<-1> : tensor<513xi16>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05:-32768>>
  func.return
}
// CHECK: 'qnn.softmax_lut': the result must be full-range i16 with zero point 0

// -----

func.func @softmax_input_i8(%x: tensor<4x!qnn.uniform<i8:f32, 0.05:-128>>) {
  %0 = qnn.softmax_lut %x {input_multiplier = 1759191844 : i64, input_shift = 28 : i64, exp_table = dense<2> : tensor<513xi16>, reciprocal_table = dense<-1> : tensor<513xi16>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-128>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.softmax_lut': the input must be full-range i16 with zero point 0

// -----

func.func @softmax_shape(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.softmax_lut %x {input_multiplier = 1759191844 : i64, input_shift = 28 : i64, exp_table = dense<2> : tensor<513xi16>, reciprocal_table = dense<-1> : tensor<513xi16>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<5x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: 'qnn.softmax_lut': result shape must be 4, got 5

// -----

func.func @softmax_missing_table(%x: tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) {
  %0 = qnn.softmax_lut %x {input_multiplier = 1759191844 : i64, input_shift = 28 : i64, exp_table = dense<2> : tensor<513xi16>} : (tensor<4x!qnn.uniform<i16:f32, 0.000244140625>>) -> tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>
  func.return
}
// CHECK: property 'reciprocal_table' expected in operation 'qnn.softmax_lut'

// RUN: npu-opt %s | npu-opt | filecheck %s
// RUN: npu-opt %s --print-op-generic | npu-opt | filecheck %s

// Printing and parsing of !qnn.uniform types.

// Per tensor, with and without a zero point; an explicit zero point of 0 is not printed.

// CHECK-LABEL: func.func @per_tensor(%x: tensor<4x!qnn.uniform<i8:f32, 0.0235:-3>>)
func.func @per_tensor(%x: tensor<4x!qnn.uniform<i8:f32, 0.0235:-3>>) {
  func.return
}

// A per-axis type on a dynamic dimension: any size may come (the runtime checks the array).

// CHECK-LABEL: func.func @per_axis_dynamic(%x: tensor<?x4x!qnn.uniform<i8:f32:0, {0.5, 0.25}>>)
func.func @per_axis_dynamic(%x: tensor<?x4x!qnn.uniform<i8:f32:0, {0.5, 0.25}>>) {
  func.return
}

// CHECK-LABEL: func.func @zero_point_omitted(%x: tensor<4x!qnn.uniform<i8:f32, 0.5>>)
func.func @zero_point_omitted(%x: tensor<4x!qnn.uniform<i8:f32, 0.5>>) {
  func.return
}

// CHECK-LABEL: func.func @zero_point_zero(%x: tensor<4x!qnn.uniform<i8:f32, 0.5>>)
func.func @zero_point_zero(%x: tensor<4x!qnn.uniform<i8:f32, 0.5:0>>) {
  func.return
}

// Scales print as the shortest decimal that parses back to the same double.

// CHECK-LABEL: func.func @integer_scale(%x: tensor<4x!qnn.uniform<i8:f32, 2.0:1>>)
func.func @integer_scale(%x: tensor<4x!qnn.uniform<i8:f32, 2:1>>) {
  func.return
}

// CHECK-LABEL: func.func @exponent_scale(%x: tensor<4x!qnn.uniform<i16:f32, 1.5e-05>>)
func.func @exponent_scale(%x: tensor<4x!qnn.uniform<i16:f32, 1.5e-5>>) {
  func.return
}

// CHECK-LABEL: func.func @power_of_two_scale(%x: tensor<4x!qnn.uniform<i16:f32, 3.0517578125e-05>>)
func.func @power_of_two_scale(%x: tensor<4x!qnn.uniform<i16:f32, 0.000030517578125>>) {
  func.return
}

// CHECK-LABEL: func.func @long_scale(%x: tensor<4x!qnn.uniform<i8:f32, 0.12345678901234568>>)
func.func @long_scale(%x: tensor<4x!qnn.uniform<i8:f32, 0.123456789012345678901>>) {
  func.return
}

// CHECK-LABEL: func.func @large_scale(%x: tensor<4x!qnn.uniform<i8:f32, 1.0e+20:5>>)
func.func @large_scale(%x: tensor<4x!qnn.uniform<i8:f32, 1.0e20:5>>) {
  func.return
}

// Storage types: unsigned, 16-bit, 4-bit (held in i8 constants) and 32-bit.

// CHECK-LABEL: func.func @u8(%x: tensor<4x!qnn.uniform<u8:f32, 0.1:128>>)
func.func @u8(%x: tensor<4x!qnn.uniform<u8:f32, 0.1:128>>) {
  func.return
}

// CHECK-LABEL: func.func @u8_extremes(%x: tensor<4x!qnn.uniform<u8:f32, 0.1:255>>)
func.func @u8_extremes(%x: tensor<4x!qnn.uniform<u8:f32, 0.1:255>>) {
  func.return
}

// CHECK-LABEL: func.func @i16(%x: tensor<4x!qnn.uniform<i16:f32, 0.001:-32768>>)
func.func @i16(%x: tensor<4x!qnn.uniform<i16:f32, 0.001:-32768>>) {
  func.return
}

// CHECK-LABEL: func.func @u16(%x: tensor<4x!qnn.uniform<u16:f32, 0.25:32768>>)
func.func @u16(%x: tensor<4x!qnn.uniform<u16:f32, 0.25:32768>>) {
  func.return
}

// CHECK-LABEL: func.func @i4(%x: tensor<4x!qnn.uniform<i4:f32, 0.5:-8>>)
func.func @i4(%x: tensor<4x!qnn.uniform<i4:f32, 0.5:-8>>) {
  func.return
}

// CHECK-LABEL: func.func @i32(%x: tensor<4x!qnn.uniform<i32:f32, 1.0e-06:-2147483648>>)
func.func @i32(%x: tensor<4x!qnn.uniform<i32:f32, 1.0e-06:-2147483648>>) {
  func.return
}

// Narrow storage ranges; the full range is not printed.

// CHECK-LABEL: func.func @narrow_i8(%x: tensor<4x!qnn.uniform<i8<-127:127>:f32, 0.5>>)
func.func @narrow_i8(%x: tensor<4x!qnn.uniform<i8<-127:127>:f32, 0.5>>) {
  func.return
}

// CHECK-LABEL: func.func @narrow_i4(%x: tensor<4x!qnn.uniform<i4<-7:7>:f32, 0.5:-7>>)
func.func @narrow_i4(%x: tensor<4x!qnn.uniform<i4<-7:7>:f32, 0.5:-7>>) {
  func.return
}

// CHECK-LABEL: func.func @narrow_u8(%x: tensor<4x!qnn.uniform<u8<0:254>:f32, 0.5:1>>)
func.func @narrow_u8(%x: tensor<4x!qnn.uniform<u8<0:254>:f32, 0.5:1>>) {
  func.return
}

// CHECK-LABEL: func.func @full_range(%x: tensor<4x!qnn.uniform<i8:f32, 0.5>>)
func.func @full_range(%x: tensor<4x!qnn.uniform<i8<-128:127>:f32, 0.5>>) {
  func.return
}

// Per axis: one scale and zero point per index of the axis.

// CHECK-LABEL: func.func @per_axis_0(%x: tensor<2x3x!qnn.uniform<i8:f32:0, {0.01, 0.02:1}>>)
func.func @per_axis_0(%x: tensor<2x3x!qnn.uniform<i8:f32:0, {0.01, 0.02:1}>>) {
  func.return
}

// CHECK-LABEL: func.func @per_axis_1(%x: tensor<2x3x!qnn.uniform<u8:f32:1, {0.5, 0.25:128, 1.0:255}>>)
func.func @per_axis_1(%x: tensor<2x3x!qnn.uniform<u8:f32:1, {0.5:0, 0.25:128, 1:255}>>) {
  func.return
}

// CHECK-LABEL: func.func @per_axis_narrow(%x: tensor<3x1x1x1x!qnn.uniform<i8<-127:127>:f32:0, {0.1, 0.2, 0.3}>>)
func.func @per_axis_narrow(%x: tensor<3x1x1x1x!qnn.uniform<i8<-127:127>:f32:0, {0.1, 0.2, 0.3}>>) {
  func.return
}

// CHECK-LABEL: func.func @per_axis_single(%x: tensor<1x4x!qnn.uniform<i16:f32:0, {0.5:-3}>>)
func.func @per_axis_single(%x: tensor<1x4x!qnn.uniform<i16:f32:0, {0.5:-3}>>) {
  func.return
}
// Constants hold storage integers: i4 in i8, u8/u16 in unsigned (or signless) integers.

// CHECK-LABEL: func.func @constants
// CHECK-NEXT:    %0 = qnn.constant {value = dense<[-8, 7]> : tensor<2xi8>} : tensor<2x!qnn.uniform<i4:f32, 0.5>>
// CHECK-NEXT:    %1 = qnn.constant {value = dense<[0, 65535]> : tensor<2xui16>} : tensor<2x!qnn.uniform<u16:f32, 0.25:32768>>
// CHECK-NEXT:    %2 = qnn.constant {value = dense<[-1, 127]> : tensor<2xi8>} : tensor<2x!qnn.uniform<u8:f32, 0.1:128>>
// CHECK-NEXT:    %3 = qnn.constant {value = dense<[-32768, 32767]> : tensor<2xi16>} : tensor<2x!qnn.uniform<i16:f32, 0.001>>
// CHECK-NEXT:    %4 = qnn.constant {value = dense<[[-127, 127], [0, 1]]> : tensor<2x2xi8>} : tensor<2x2x!qnn.uniform<i8<-127:127>:f32:0, {0.1, 0.2:1}>>
// CHECK-NEXT:    func.return
func.func @constants() {
  %0 = qnn.constant {value = dense<[-8, 7]> : tensor<2xi8>} : tensor<2x!qnn.uniform<i4:f32, 0.5>>
  %1 = qnn.constant {value = dense<[0, 65535]> : tensor<2xui16>} : tensor<2x!qnn.uniform<u16:f32, 0.25:32768>>
  %2 = qnn.constant {value = dense<[-1, 127]> : tensor<2xi8>} : tensor<2x!qnn.uniform<u8:f32, 0.1:128>>
  %3 = qnn.constant {value = dense<[-32768, 32767]> : tensor<2xi16>} : tensor<2x!qnn.uniform<i16:f32, 0.001>>
  %4 = qnn.constant {value = dense<[[-127, 127], [0, 1]]> : tensor<2x2xi8>} : tensor<2x2x!qnn.uniform<i8<-127:127>:f32:0, {0.1, 0.2:1}>>
  func.return
}

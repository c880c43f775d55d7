// RUN: npu-opt %s | npu-opt | filecheck %s
// RUN: npu-opt %s --print-op-generic | npu-opt | filecheck %s

// Round trip of the integer and bool ops: casts, comparisons, logic, where, and integer
// arithmetic, reductions and data movement.

// CHECK-LABEL: func.func @casts
// CHECK-NEXT:    %0 = nn.cast %x : (tensor<2x3xi32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %1 = nn.cast %0 : (tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %2 = nn.cast %1 {name = "flags"} : (tensor<2x3xi1>) -> tensor<2x3xui8>
// CHECK-NEXT:    func.return
func.func @casts(%x: tensor<2x3xi32>) -> tensor<2x3xui8> {
  %0 = nn.cast %x : (tensor<2x3xi32>) -> tensor<2x3xf32>
  %1 = nn.cast %0 : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %2 = nn.cast %1 {name = "flags"} : (tensor<2x3xi1>) -> tensor<2x3xui8>
  func.return %2 : tensor<2x3xui8>
}

// CHECK-LABEL: func.func @compare_and_select
// CHECK-NEXT:    %0 = nn.equal %x, %y : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
// CHECK-NEXT:    %1 = nn.less %x, %y : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
// CHECK-NEXT:    %2 = nn.less_equal %x, %y : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
// CHECK-NEXT:    %3 = nn.greater %f, %f : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
// CHECK-NEXT:    %4 = nn.greater_equal %x, %y : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
// CHECK-NEXT:    %5 = nn.not %0 : (tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %6 = nn.and %5, %1 : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %7 = nn.or %6, %3 : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %8 = nn.xor %7, %2 : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %9 = nn.where %8, %x, %y : (tensor<2x3xi1>, tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT:    %10 = nn.where %3, %f, %f : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    func.return
func.func @compare_and_select(%x: tensor<2x3xi64>, %y: tensor<3xi64>, %f: tensor<3xf32>) -> (tensor<2x3xi64>, tensor<3xf32>) {
  %0 = nn.equal %x, %y : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %1 = nn.less %x, %y : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %2 = nn.less_equal %x, %y : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %3 = nn.greater %f, %f : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  %4 = nn.greater_equal %x, %y : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %5 = nn.not %0 : (tensor<2x3xi1>) -> tensor<2x3xi1>
  %6 = nn.and %5, %1 : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %7 = nn.or %6, %3 : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %8 = nn.xor %7, %2 : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %9 = nn.where %8, %x, %y : (tensor<2x3xi1>, tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  %10 = nn.where %3, %f, %f : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %9, %10 : tensor<2x3xi64>, tensor<3xf32>
}

// CHECK-LABEL: func.func @integer_arithmetic
// CHECK-NEXT:    %0 = nn.add %x, %x : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %1 = nn.div %0, %x : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %2 = nn.maximum %1, %x : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %3 = nn.neg %2 : (tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %4 = nn.reduce_sum %3 {axes = array<i64: 1>} : (tensor<2x3xi32>) -> tensor<2x1xi32>
// CHECK-NEXT:    %5 = nn.argmax %x {axis = 1 : i64} : (tensor<2x3xi32>) -> tensor<2x1xi64>
// CHECK-NEXT:    func.return
func.func @integer_arithmetic(%x: tensor<2x3xi32>) -> (tensor<2x1xi32>, tensor<2x1xi64>) {
  %0 = nn.add %x, %x : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %1 = nn.div %0, %x : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %2 = nn.maximum %1, %x : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %3 = nn.neg %2 : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %4 = nn.reduce_sum %3 {axes = array<i64: 1>} : (tensor<2x3xi32>) -> tensor<2x1xi32>
  %5 = nn.argmax %x {axis = 1 : i64} : (tensor<2x3xi32>) -> tensor<2x1xi64>
  func.return %4, %5 : tensor<2x1xi32>, tensor<2x1xi64>
}

// CHECK-LABEL: func.func @integer_movement
// CHECK-NEXT:    %0 = nn.reshape %x : (tensor<2x3xi1>) -> tensor<6xi1>
// CHECK-NEXT:    %1 = nn.concat %y, %y {axis = 0 : i64} : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<4x3xi64>
// CHECK-NEXT:    %2 = nn.gather %1, %i {axis = 1 : i64} : (tensor<4x3xi64>, tensor<2xi32>) -> tensor<4x2xi64>
// CHECK-NEXT:    %3 = nn.reduce_max %x {axes = array<i64: 0>} : (tensor<2x3xi1>) -> tensor<1x3xi1>
// CHECK-NEXT:    func.return
func.func @integer_movement(%x: tensor<2x3xi1>, %y: tensor<2x3xi64>, %i: tensor<2xi32>) -> (tensor<6xi1>, tensor<4x2xi64>, tensor<1x3xi1>) {
  %0 = nn.reshape %x : (tensor<2x3xi1>) -> tensor<6xi1>
  %1 = nn.concat %y, %y {axis = 0 : i64} : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<4x3xi64>
  %2 = nn.gather %1, %i {axis = 1 : i64} : (tensor<4x3xi64>, tensor<2xi32>) -> tensor<4x2xi64>
  %3 = nn.reduce_max %x {axes = array<i64: 0>} : (tensor<2x3xi1>) -> tensor<1x3xi1>
  func.return %0, %2, %3 : tensor<6xi1>, tensor<4x2xi64>, tensor<1x3xi1>
}

// RUN: npu-opt %s | npu-opt | filecheck %s
// RUN: npu-opt %s --print-op-generic | npu-opt | filecheck %s

// The example plugin's ops (examples/plugins/npuc-example-ops) round-trip: parsing the
// namespace `example` loads the plugin's dialect.

// CHECK-LABEL: func.func @soft_clip
// CHECK-NEXT:    %0 = example.soft_clip %x {limit = 2.500000e+00 : f32, name = "clip"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %1 = example.qsoft_clip %q {table = dense<3> : tensor<256xi8>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<i8:f32, 0.02>>
// CHECK-NEXT:    func.return
func.func @soft_clip(%x: tensor<2x3xf32>, %q: tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) {
  %0 = example.soft_clip %x {limit = 2.5 : f32, name = "clip"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = example.qsoft_clip %q {table = dense<3> : tensor<256xi8>} : (tensor<4x!qnn.uniform<i8:f32, 0.05:-3>>) -> tensor<4x!qnn.uniform<i8:f32, 0.02>>
  func.return
}

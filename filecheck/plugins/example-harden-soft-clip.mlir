// RUN: npu-opt %s -p 'example-harden-soft-clip{min_limit=2.0}' | filecheck %s
// RUN: npu-opt %s -p example-harden-soft-clip | filecheck %s --check-prefix=ALL

// The example plugin's pass: SoftClip with limit >= min_limit becomes nn.clip to
// [-limit, limit], keeping its name; smaller limits stay.

// CHECK-LABEL: func.func @harden
// CHECK-NEXT:    %[[S:.*]] = example.soft_clip %x {limit = 1.000000e+00 : f32, name = "soft"} :
// CHECK-NEXT:    %[[H:.*]] = nn.clip %[[S]] {min = -3.000000e+00 : f32, max = 3.000000e+00 : f32, name = "hard"} :
// CHECK-NEXT:    func.return %[[H]]
// ALL-LABEL: func.func @harden
// ALL-NEXT:    nn.clip %x {min = -1.000000e+00 : f32, max = 1.000000e+00 : f32, name = "soft"} :
// ALL-NEXT:    nn.clip
// ALL-NOT:     example.soft_clip
func.func @harden(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = example.soft_clip %x {limit = 1.0 : f32, name = "soft"} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = example.soft_clip %0 {limit = 3.0 : f32, name = "hard"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}

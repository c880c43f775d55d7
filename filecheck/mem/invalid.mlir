// RUN: npu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Verifier errors of the mem dialect: buffers, regions, and the module-level check of
// every buffer against the regions (run by the module's first mem.region).

func.func @negative_offset(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.relu %x {mem.buffer = #mem.buffer<"activations", -64, 16>} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: mem.buffer offset and size must be non-negative

// -----

func.func @backwards_range(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.relu %x {mem.buffer = #mem.buffer<"activations", 0, 16, live [3, 2]>} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: mem.buffer live range [3, 2] is not a valid range

// -----

func.func @half_range(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.relu %x {mem.buffer = #mem.buffer<"activations", 0, 16, live [-1, 2]>} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: mem.buffer live range [-1, 2] is not a valid range

// -----

mem.region @activations {memory = "sram", size = -64 : i64, alignment = 64 : i64}
// CHECK: region @activations: size must be non-negative, got -64

// -----

mem.region @activations {memory = "sram", size = 96 : i64, alignment = 48 : i64}
// CHECK: region @activations: alignment must be a power of two, got 48

// -----

mem.region @activations {memory = "sram", size = 96 : i64, alignment = 64 : i64}
// CHECK: region @activations: size 96 is not a multiple of 64

// -----

mem.region @activations {memory = "sram", size = 64 : i64, alignment = 64 : i64, lower_bound = 128 : i64}
// CHECK: region @activations: lower bound 128 exceeds size 64

// -----

mem.region @activations {memory = "sram", size = 128 : i64, alignment = 64 : i64, naive = 64 : i64}
// CHECK: region @activations: naive size 64 is below size 128

// -----

mem.region @activations {memory = "sram", size = 64 : i64, alignment = 64 : i64}
mem.region @activations {memory = "flash", size = 64 : i64, alignment = 64 : i64}
// CHECK: Redefinition of symbol "activations"

// -----

mem.region @activations {memory = "sram", size = 64 : i64, alignment = 16 : i64}
func.func @past_the_end(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = nn.relu %x {mem.buffer = #mem.buffer<"activations", 48, 32, live [0, 0]>} : (tensor<8xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}
// CHECK: result 0 of 'nn.relu': bytes [48, 80) exceed region @activations of 64 bytes

// -----

mem.region @activations {memory = "sram", size = 128 : i64, alignment = 64 : i64}
func.func @misaligned(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = nn.relu %x {mem.buffer = #mem.buffer<"activations", 32, 32, live [0, 0]>} : (tensor<8xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}
// CHECK: result 0 of 'nn.relu': offset 32 in @activations is not 64-aligned

// -----

mem.region @activations {memory = "sram", size = 128 : i64, alignment = 64 : i64}
func.func @unknown_region(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = nn.relu %x {mem.buffer = #mem.buffer<"scratch", 0, 32, live [0, 0]>} : (tensor<8xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}
// CHECK: result 0 of 'nn.relu': no mem.region @scratch

// -----

mem.region @mutable {memory = "sram", size = 64 : i64, alignment = 64 : i64}
func.func @argument_past_the_end(%x: tensor<32xf32> {mem.buffer = #mem.buffer<"mutable", 0, 128>}) {
  func.return
}
// CHECK: argument 0 of @argument_past_the_end: bytes [0, 128) exceed region @mutable of 64 bytes

// -----

mem.region @mutable {memory = "sram", size = 64 : i64, alignment = 64 : i64}
func.func @result_in_no_region(%x: tensor<4xf32>) -> (tensor<4xf32> {mem.buffer = #mem.buffer<"outputs", 0, 16>}) {
  func.return %x : tensor<4xf32>
}
// CHECK: result 0 of @result_in_no_region: no mem.region @outputs

// -----

mem.region @mutable {memory = "sram", size = 64 : i64, alignment = 64 : i64}
func.func @not_a_buffer(%x: tensor<4xf32> {mem.buffer = "mutable"}) {
  func.return
}
// CHECK: argument 0 of @not_a_buffer: mem.buffer must be a #mem.buffer

// -----

mem.region @activations {memory = "sram", size = 128 : i64, alignment = 64 : i64}
func.func @one_buffer_two_results(%x: tensor<2x4xf32>) {
  %a, %b = nn.split %x {axis = 0 : i64, mem.buffer = #mem.buffer<"activations", 0, 16, live [0, 0]>} : (tensor<2x4xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>)
  func.return
}
// CHECK: 'nn.split': mem.buffer must be a #mem.buffer per result (2), an array for several results

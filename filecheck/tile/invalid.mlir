// RUN: npu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Verifier errors of the tile dialect.

func.func @slice_rank(%x: tensor<4x8xf32>) {
  %s = tile.slice %x {offsets = array<i64: 0>} : tensor<4x8xf32> -> tensor<2x8xf32>
  func.return
}
// CHECK: 'tile.slice': offsets (1), the source (rank 2) and the tile (rank 2) must have one rank

// -----

func.func @slice_tile_rank(%x: tensor<4x8xf32>) {
  %s = tile.slice %x {offsets = array<i64: 0, 0>} : tensor<4x8xf32> -> tensor<32xf32>
  func.return
}
// CHECK: 'tile.slice': offsets (2), the source (rank 2) and the tile (rank 1) must have one rank

// -----

func.func @slice_past_end(%x: tensor<4x8xf32>) {
  %s = tile.slice %x {offsets = array<i64: 0, 6>} : tensor<4x8xf32> -> tensor<2x3xf32>
  func.return
}
// CHECK: 'tile.slice': region [6, 9) of axis 1 is outside the source's size 8

// -----

func.func @slice_negative(%x: tensor<4x8xf32>) {
  %s = tile.slice %x {offsets = array<i64: -1, 0>} : tensor<4x8xf32> -> tensor<2x8xf32>
  func.return
}
// CHECK: 'tile.slice': region [-1, 1) of axis 0 is outside the source's size 4

// -----

func.func @slice_empty(%x: tensor<4x8xf32>) {
  %s = tile.slice %x {offsets = array<i64: 0, 0>} : tensor<4x8xf32> -> tensor<0x8xf32>
  func.return
}
// CHECK: 'tile.slice': region [0, 0) of axis 0 is outside the source's size 4

// -----

func.func @slice_element_type(%x: tensor<4x8xf32>) {
  %s = tile.slice %x {offsets = array<i64: 0, 0>} : tensor<4x8xf32> -> tensor<2x8xi32>
  func.return
}
// CHECK: 'tile.slice': the tile's element type i32 must be the source's region type f32

// -----

func.func @slice_per_axis_scales(%w: tensor<3x2x!qnn.uniform<i8:f32:0, {0.1, 0.2, 0.3}>>) {
  %s = tile.slice %w {offsets = array<i64: 1, 0>} : tensor<3x2x!qnn.uniform<i8:f32:0, {0.1, 0.2, 0.3}>> -> tensor<2x2x!qnn.uniform<i8:f32:0, {0.1, 0.2}>>
  func.return
}
// CHECK: 'tile.slice': the tile's element type !qnn.uniform<i8:f32:0, {0.1, 0.2}> must be the source's region type !qnn.uniform<i8:f32:0, {0.2, 0.3}>

// -----

func.func @slice_quantization(%x: tensor<4x8x!qnn.uniform<i8:f32, 0.5>>) {
  %s = tile.slice %x {offsets = array<i64: 0, 0>} : tensor<4x8x!qnn.uniform<i8:f32, 0.5>> -> tensor<4x4x!qnn.uniform<i8:f32, 0.25>>
  func.return
}
// CHECK: 'tile.slice': the tile's element type !qnn.uniform<i8:f32, 0.25> must be the source's region type !qnn.uniform<i8:f32, 0.5>

// -----

func.func @slice_missing_offsets(%x: tensor<4x8xf32>) {
  %s = tile.slice %x : tensor<4x8xf32> -> tensor<2x8xf32>
  func.return
}
// CHECK: property 'offsets' expected in operation 'tile.slice'

// -----

func.func @load_past_end(%x: tensor<4x8xf32>) {
  %l = tile.load %x {offsets = array<i64: 3, 0>, from = "dram", to = "sram"} : tensor<4x8xf32> -> tensor<2x8xf32>
  func.return
}
// CHECK: 'tile.load': region [3, 5) of axis 0 is outside the source's size 4

// -----

func.func @load_same_memory(%x: tensor<4x8xf32>) {
  %l = tile.load %x {offsets = array<i64: 0, 0>, from = "sram", to = "sram"} : tensor<4x8xf32> -> tensor<2x8xf32>
  func.return
}
// CHECK: 'tile.load': a DMA needs two different memories

// -----

func.func @load_empty_memory(%x: tensor<4x8xf32>) {
  %l = tile.load %x {offsets = array<i64: 0, 0>, from = "", to = "sram"} : tensor<4x8xf32> -> tensor<2x8xf32>
  func.return
}
// CHECK: 'tile.load': memory names must not be empty

// -----

func.func @load_missing_memory(%x: tensor<4x8xf32>) {
  %l = tile.load %x {offsets = array<i64: 0, 0>, to = "sram"} : tensor<4x8xf32> -> tensor<2x8xf32>
  func.return
}
// CHECK: property 'from' expected in operation 'tile.load'

// -----

func.func @empty_memory() {
  %e = tile.empty {to = ""} : tensor<4x8xf32>
  func.return
}
// CHECK: 'tile.empty': memory names must not be empty

// -----

func.func @insert_past_end(%t: tensor<2x8xf32>, %d: tensor<4x8xf32>) {
  %i = tile.insert %t into %d {offsets = array<i64: 3, 0>} : tensor<2x8xf32> into tensor<4x8xf32>
  func.return
}
// CHECK: 'tile.insert': region [3, 5) of axis 0 is outside the destination's size 4

// -----

func.func @insert_rank(%t: tensor<8xf32>, %d: tensor<4x8xf32>) {
  %i = tile.insert %t into %d {offsets = array<i64: 0, 0>} : tensor<8xf32> into tensor<4x8xf32>
  func.return
}
// CHECK: 'tile.insert': offsets (2), the destination (rank 2) and the tile (rank 1) must have one rank

// -----

func.func @insert_element_type(%t: tensor<2x8xf16>, %d: tensor<4x8xf32>) {
  %i = tile.insert %t into %d {offsets = array<i64: 0, 0>} : tensor<2x8xf16> into tensor<4x8xf32>
  func.return
}
// CHECK: 'tile.insert': the tile's element type f16 must be the destination's region type f32

// -----

func.func @insert_result_type(%t: tensor<2x8xf32>, %d: tensor<4x8xf32>) {
  %i = "tile.insert"(%t, %d) <{offsets = array<i64: 0, 0>}> : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<4x9xf32>
  func.return
}
// CHECK: attribute tensor<4x8xf32> expected from variable 'DEST', but got tensor<4x9xf32>

// -----

func.func @store_same_memory(%t: tensor<2x8xf32>, %d: tensor<4x8xf32>) {
  %s = tile.store %t into %d {offsets = array<i64: 0, 0>, from = "dram", to = "dram"} : tensor<2x8xf32> into tensor<4x8xf32>
  func.return
}
// CHECK: 'tile.store': a DMA needs two different memories

// -----

func.func @store_past_end(%t: tensor<2x8xf32>, %d: tensor<4x8xf32>) {
  %s = tile.store %t into %d {offsets = array<i64: 0, 1>, from = "sram", to = "dram"} : tensor<2x8xf32> into tensor<4x8xf32>
  func.return
}
// CHECK: 'tile.store': region [1, 9) of axis 1 is outside the destination's size 8

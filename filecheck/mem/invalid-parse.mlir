// RUN: npu-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// Errors raised while parsing #mem.buffer attributes.

func.func @missing_size(%x: tensor<4xf32> {mem.buffer = #mem.buffer<"mutable", 0>}) {
  func.return
}
// CHECK: Expected ','

// -----

func.func @region_not_a_string(%x: tensor<4xf32> {mem.buffer = #mem.buffer<mutable, 0, 16>}) {
  func.return
}
// CHECK: string literal expected

// -----

func.func @range_without_keyword(%x: tensor<4xf32> {mem.buffer = #mem.buffer<"mutable", 0, 16, [0, 1]>}) {
  func.return
}
// CHECK: Expected 'live'

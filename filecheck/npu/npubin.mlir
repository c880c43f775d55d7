// RUN: npu-opt %s -t npubin -o %t.npubin
// RUN: npu-opt %t.npubin | filecheck %s
// RUN: npu-opt %t.npubin -t npubin -o %t.again.npubin
// RUN: cmp %t.npubin %t.again.npubin
// RUN: npu-opt %t.npubin | npu-opt -t npubin -o %t.text.npubin
// RUN: cmp %t.npubin %t.text.npubin
// RUN: npu-opt %t.npubin --print-op-generic | npu-opt -t npubin -o %t.generic.npubin
// RUN: cmp %t.npubin %t.generic.npubin
// RUN: head -c 100 %t.npubin > %t.cut.npubin
// RUN: not npu-opt %t.cut.npubin 2>&1 | filecheck %s --check-prefix=CUT

// Binary round trip: the program is written as a .npubin, disassembled, and written again;
// binary -> text -> binary is byte-identical. The disassembly leaves out properties equal
// to their defaults (strides, dilations, groups and the clamp below) and prints every
// property in the op's own order.

npu.program @double_buffer regions [#npu.region<"constants", 512, "flash">, #npu.region<"mutable", 256, "sram">, #npu.region<"sram", 1024, "sram">] inputs [#npu.io<"x", #npu.tensor<"mutable", 0, [1, 4, 4, 4], i8>, 0.25:-1>] outputs [#npu.io<"y", #npu.tensor<"mutable", 64, [1, 4, 4, 4], i8>, 0.5:3>, #npu.io<"raw", #npu.tensor<"mutable", 128, [4], i32>>] layers ["conv_a", "conv_b"] attributes {constants = dense<[0, 1, 2, 3, 4, 5, 6, 7, -1, -2, -3, -4, 127, -128, 9, 10]> : tensor<16xi8>, debug = {producer = "lit"}} {
  %0 = npu.dma <"constants", 0, [4, 4, 1, 1], i8> -> <"sram", 0, [4, 4, 1, 1], i8> {layer = 0 : i64}
  %1 = npu.dma <"constants", 16, [4, 4, 1, 1], i8> -> <"sram", 16, [4, 4, 1, 1], i8> {layer = 1 : i64}
  %2 = npu.conv2d ifm <"mutable", 0, [1, 4, 4, 4], i8> weights <"sram", 0, [4, 4, 1, 1], i8> bias_scale <"constants", 64, [4, 4], i32> ofm <"sram", 64, [1, 4, 4, 4], [64, 1, 16, 4], i8> after %0 {layer = 0 : i64, rounding = "tflite", strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, clamp_min = -128 : i64, clamp_max = 127 : i64, ifm_zero_point = -1 : i64}
  %3 = npu.conv2d ifm <"sram", 64, [1, 4, 4, 4], [64, 1, 16, 4], i8> weights <"sram", 16, [4, 4, 1, 1], i8> bias_scale <"constants", 128, [4, 4], i32> ofm <"mutable", 64, [1, 4, 4, 4], i8> after %1 {ofm_zero_point = 3 : i64, clamp_min = 3 : i64, layer = 1 : i64}
  %4 = npu.dma <"constants", 32, [4, 4, 1, 1], i8> -> <"sram", 0, [4, 4, 1, 1], i8> after %2
  %5 = npu.dma <"constants", 48, [4], i32> -> <"mutable", 128, [4], i32> after %3, %4
}

// CUT: cut.npubin: error: byte 16 (0x10): the header says the file has {{[0-9]+}} bytes, it has 100 (truncated or extended)

// CHECK:      npu.program @double_buffer regions [#npu.region<"constants", 512, "flash">, #npu.region<"mutable", 256, "sram">, #npu.region<"sram", 1024, "sram">] inputs [#npu.io<"x", #npu.tensor<"mutable", 0, [1, 4, 4, 4], i8>, 0.25:-1>] outputs [#npu.io<"y", #npu.tensor<"mutable", 64, [1, 4, 4, 4], i8>, 0.5:3>, #npu.io<"raw", #npu.tensor<"mutable", 128, [4], i32>>] layers ["conv_a", "conv_b"] attributes {constants = dense<[0, 1, 2, 3, 4, 5, 6, 7, -1, -2, -3, -4, 127, -128, 9, 10]> : tensor<16xi8>, debug = {producer = "lit"}} {
// CHECK-NEXT:   %0 = npu.dma <"constants", 0, [4, 4, 1, 1], i8> -> <"sram", 0, [4, 4, 1, 1], i8> {layer = 0 : i64}
// CHECK-NEXT:   %1 = npu.dma <"constants", 16, [4, 4, 1, 1], i8> -> <"sram", 16, [4, 4, 1, 1], i8> {layer = 1 : i64}
// CHECK-NEXT:   %2 = npu.conv2d ifm <"mutable", 0, [1, 4, 4, 4], i8> weights <"sram", 0, [4, 4, 1, 1], i8> bias_scale <"constants", 64, [4, 4], i32> ofm <"sram", 64, [1, 4, 4, 4], [64, 1, 16, 4], i8> after %0 {ifm_zero_point = -1 : i64, rounding = "tflite", layer = 0 : i64}
// CHECK-NEXT:   %3 = npu.conv2d ifm <"sram", 64, [1, 4, 4, 4], [64, 1, 16, 4], i8> weights <"sram", 16, [4, 4, 1, 1], i8> bias_scale <"constants", 128, [4, 4], i32> ofm <"mutable", 64, [1, 4, 4, 4], i8> after %1 {ofm_zero_point = 3 : i64, clamp_min = 3 : i64, layer = 1 : i64}
// CHECK-NEXT:   %4 = npu.dma <"constants", 32, [4, 4, 1, 1], i8> -> <"sram", 0, [4, 4, 1, 1], i8> after %2
// CHECK-NEXT:   %5 = npu.dma <"constants", 48, [4], i32> -> <"mutable", 128, [4], i32> after %3, %4
// CHECK-NEXT: }

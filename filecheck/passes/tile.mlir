// RUN: npu-opt %s --split-input-file -p 'tile{target="mcu-64" manual="(0,1,2)" cascade="recompute"}' | filecheck %s --check-prefix=CASCADE
// RUN: npu-opt %s --split-input-file -p 'tile{target="mcu-64" manual="(0,1,2)"}' | filecheck %s --check-prefix=ROLLING
// RUN: npu-opt %s --split-input-file -p 'tile{target="mcu-64" manual="(0,0,1,2);(1,1,2)"}' | filecheck %s --check-prefix=SINGLE
// RUN: npu-opt %s --split-input-file -p 'tile{target="mcu-64" sram_limit=12288}' | filecheck %s --check-prefix=STREAM
// RUN: npu-opt %s --split-input-file -p 'tile{target="mid-256" manual="(0,1,2)"}' | filecheck %s --check-prefix=DRAM
// RUN: npu-opt %s --split-input-file -p 'tile{target="mcu-64" manual="(0,1,2)" report=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT
// RUN: not npu-opt %s --split-input-file -p 'tile{target="mcu-64" manual="(0,1,2x"}' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not npu-opt %s --split-input-file -p 'tile{target="mcu-64" manual="(0,7,1,1)"}' 2>&1 | filecheck %s --check-prefix=RANGE
// RUN: not npu-opt %s --split-input-file -p 'tile{target="mcu-64" manual="(1,0,1,1)"}' 2>&1 | filecheck %s --check-prefix=ORDER
// RUN: not npu-opt %s --split-input-file -p 'tile{target="mcu-64" manual="(0,1,9)"}' 2>&1 | filecheck %s --check-prefix=ROWS
// RUN: not npu-opt %s --split-input-file -p 'tile{target="mcu-64" manual="(0,1,1,1);(1,1,2)"}' 2>&1 | filecheck %s --check-prefix=OVERLAP
// RUN: not npu-opt %s --split-input-file -p 'tile' 2>&1 | filecheck %s --check-prefix=NO-TARGET
// RUN: not env NPUC_NO_PLUGIN_ENTRY_POINTS=1 npu-opt %s --split-input-file -p 'tile{target="no-such-npu"}' 2>&1 | filecheck %s --check-prefix=BAD-TARGET
// RUN: not npu-opt %s --split-input-file -p 'tile{target="mcu-64" optimise="speed"}' 2>&1 | filecheck %s --check-prefix=OPTIMISE
// RUN: not npu-opt %s --split-input-file -p 'tile{target="mcu-64"},tile{target="mcu-64"}' 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not npu-opt %s --split-input-file -p 'tile{target="mcu-64" cascade="circular"}' 2>&1 | filecheck %s --check-prefix=CASCADE-KIND

// Layers are numbered 0, 1 in every case below (constants and transposes do not count).
// With `manual="(0,1,2)" cascade="recompute"` the two layers run as a cascade of 2 stripes
// along H: for each stripe of the last layer's output, every layer computes the rows the
// next one needs (halo included), border stripes keep the layer's padding, weights are
// loaded from flash once, and the stripes are assembled with tile.empty + tile.insert.
// The default, cascade="auto", runs manual cascades through rolling buffers (ROLLING), which
// differ only where a halo would be recomputed (the second case): the relu needs no halo.

// conv 3x3 pad 1 -> relu, 6 rows: stripe 0 = rows 0..2 needs input rows 0..3 (top pad 1,
// bottom pad 0); stripe 1 = rows 3..5 needs input rows 2..5 (top pad 0, bottom pad 1).
// Peak SRAM (mcu-64, 64-byte alignment): x 320 + y 320 + weights 192 + largest tile
// (output 192 + accumulators 192, or relu input 192 + output 192) = 1216 bytes; the
// conv tile's working set: input 192 + weights 192 + output 192 + accumulators 192 = 768.
// CASCADE-LABEL: func.func @main(%x: tensor<1x2x6x6xf32> {nn.name = "x"})
// CASCADE-SAME:    tile.target = "mcu-64", tile.optimise = "performance", tile.peak_sram = 1216 : i64
// CASCADE-SAME:    tile.groups = [{layers = array<i64: 0, 1>, name = "conv", parts = array<i64: 2, 1, 1>, working_set = 768 : i64, peak = 1216 : i64
// CASCADE-NEXT:    %w = nn.constant
// CASCADE-NEXT:    %[[E:.*]] = tile.empty {tile.layer = 1 : i64} : tensor<1x2x6x6xf32>
// CASCADE-NEXT:    %[[S0:.*]] = tile.slice %x {tile.layer = 0 : i64, tile.part = array<i64: 0, 0, 0>, offsets = array<i64: 0, 0, 0, 0>} : tensor<1x2x6x6xf32> -> tensor<1x2x4x6xf32>
// CASCADE-NEXT:    %[[W:.*]] = tile.load %w {tile.layer = 0 : i64, offsets = array<i64: 0, 0, 0, 0>, from = "flash", to = "sram"} : tensor<2x2x3x3xf32> -> tensor<2x2x3x3xf32>
// CASCADE-NEXT:    %[[C0:.*]] = nn.conv2d %[[S0]], %[[W]] {tile.layer = 0 : i64, tile.part = array<i64: 0, 0, 0>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 0, 1>, {{.*}}name = "conv"} : (tensor<1x2x4x6xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x3x6xf32>
// CASCADE-NEXT:    %[[R0:.*]] = nn.relu %[[C0]] {tile.layer = 1 : i64, tile.part = array<i64: 0, 0, 0>, name = "relu"} : (tensor<1x2x3x6xf32>) -> tensor<1x2x3x6xf32>
// CASCADE-NEXT:    %[[I0:.*]] = tile.insert %[[R0]] into %[[E]] {{{.*}}offsets = array<i64: 0, 0, 0, 0>} : tensor<1x2x3x6xf32> into tensor<1x2x6x6xf32>
// CASCADE-NEXT:    %[[S1:.*]] = tile.slice %x {{{.*}}offsets = array<i64: 0, 0, 2, 0>} : tensor<1x2x6x6xf32> -> tensor<1x2x4x6xf32>
// CASCADE-NEXT:    %[[C1:.*]] = nn.conv2d %[[S1]], %[[W]] {{{.*}}pads = array<i64: 0, 1, 1, 1>, {{.*}}-> tensor<1x2x3x6xf32>
// CASCADE-NEXT:    %[[R1:.*]] = nn.relu %[[C1]]
// CASCADE-NEXT:    %[[Y:.*]] = tile.insert %[[R1]] into %[[I0]] {tile.layer = 1 : i64, tile.part = array<i64: 1, 0, 0>, offsets = array<i64: 0, 0, 3, 0>}
// CASCADE-NEXT:    func.return %[[Y]] : tensor<1x2x6x6xf32>

// Tiled layer by layer (the second RUN line): the conv alone in 2 W parts (columns 0..2 read input columns 0..3 with left pad
// 1; columns 3..5 read 2..5 with right pad 1), assembled whole; then the relu alone in 2 H
// stripes of 3 rows, each a view of the conv's result.
// SINGLE-LABEL: func.func @main(%x: tensor<1x2x6x6xf32> {nn.name = "x"})
// SINGLE:         %[[E:.*]] = tile.empty {tile.layer = 0 : i64} : tensor<1x2x6x6xf32>
// SINGLE-NEXT:    %[[S0:.*]] = tile.slice %x {{{.*}}offsets = array<i64: 0, 0, 0, 0>} : tensor<1x2x6x6xf32> -> tensor<1x2x6x4xf32>
// SINGLE-NEXT:    %[[W:.*]] = tile.load %w
// SINGLE-NEXT:    %[[C0:.*]] = nn.conv2d %[[S0]], %[[W]] {{{.*}}pads = array<i64: 1, 1, 1, 0>, {{.*}}-> tensor<1x2x6x3xf32>
// SINGLE-NEXT:    %[[I0:.*]] = tile.insert %[[C0]] into %[[E]] {{{.*}}offsets = array<i64: 0, 0, 0, 0>}
// SINGLE-NEXT:    %[[S1:.*]] = tile.slice %x {{{.*}}offsets = array<i64: 0, 0, 0, 2>} : tensor<1x2x6x6xf32> -> tensor<1x2x6x4xf32>
// SINGLE-NEXT:    %[[C1:.*]] = nn.conv2d %[[S1]], %[[W]] {{{.*}}pads = array<i64: 1, 0, 1, 1>, {{.*}}-> tensor<1x2x6x3xf32>
// SINGLE-NEXT:    %[[C:.*]] = tile.insert %[[C1]] into %[[I0]] {{{.*}}offsets = array<i64: 0, 0, 0, 3>}
// SINGLE-NEXT:    %[[E1:.*]] = tile.empty {tile.layer = 1 : i64}
// SINGLE-NEXT:    %[[V0:.*]] = tile.slice %[[C]] {tile.layer = 1 : i64, tile.part = array<i64: 0, 0, 0>, offsets = array<i64: 0, 0, 0, 0>} : tensor<1x2x6x6xf32> -> tensor<1x2x3x6xf32>
// SINGLE-NEXT:    %[[R0:.*]] = nn.relu %[[V0]]
// SINGLE-NEXT:    %[[J0:.*]] = tile.insert %[[R0]] into %[[E1]]
// SINGLE-NEXT:    %[[V1:.*]] = tile.slice %[[C]] {{{.*}}offsets = array<i64: 0, 0, 3, 0>} : tensor<1x2x6x6xf32> -> tensor<1x2x3x6xf32>
// SINGLE-NEXT:    %[[R1:.*]] = nn.relu %[[V1]]
// SINGLE-NEXT:    %[[Y:.*]] = tile.insert %[[R1]] into %[[J0]] {{{.*}}offsets = array<i64: 0, 0, 3, 0>}
// SINGLE-NEXT:    func.return %[[Y]]

// mid-256 keeps inputs and outputs in DRAM, so the stripes are loaded into SRAM and the
// results stored back by DMA; the weights come from DRAM too.
// DRAM-LABEL: func.func @main(%x: tensor<1x2x6x6xf32> {nn.name = "x"})
// DRAM:         %[[E:.*]] = tile.empty {tile.layer = 1 : i64, to = "dram"} : tensor<1x2x6x6xf32>
// DRAM-NEXT:    %[[L0:.*]] = tile.load %x {{{.*}}offsets = array<i64: 0, 0, 0, 0>, from = "dram", to = "sram"} : tensor<1x2x6x6xf32> -> tensor<1x2x4x6xf32>
// DRAM-NEXT:    %[[W:.*]] = tile.load %w {{{.*}}from = "dram", to = "sram"}
// DRAM-NEXT:    %[[C0:.*]] = nn.conv2d %[[L0]], %[[W]]
// DRAM-NEXT:    %[[R0:.*]] = nn.relu %[[C0]]
// DRAM-NEXT:    %[[T0:.*]] = tile.store %[[R0]] into %[[E]] {{{.*}}offsets = array<i64: 0, 0, 0, 0>, from = "sram", to = "dram"} : tensor<1x2x3x6xf32> into tensor<1x2x6x6xf32>
// DRAM-NEXT:    %[[L1:.*]] = tile.load %x {{{.*}}offsets = array<i64: 0, 0, 2, 0>, from = "dram", to = "sram"}
// DRAM-NEXT:    %[[C1:.*]] = nn.conv2d %[[L1]], %[[W]]
// DRAM-NEXT:    %[[R1:.*]] = nn.relu %[[C1]]
// DRAM-NEXT:    %[[Y:.*]] = tile.store %[[R1]] into %[[T0]] {{{.*}}offsets = array<i64: 0, 0, 3, 0>, from = "sram", to = "dram"}
// DRAM-NEXT:    func.return %[[Y]]

// REPORT: tile: target mcu-64, SRAM limit 262144 bytes
// REPORT:      0  conv  {{ +}}nn.conv2d {{ +}}1x2x6x6 -> 1x2x6x6 {{ +}}0..1 {{ +}}2x1x1 {{ +}}768
// REPORT-NEXT: 1  relu  {{ +}}nn.relu {{ +}}1x2x6x6 -> 1x2x6x6 {{ +}}0..1 {{ +}}2x1x1
// REPORT:      layers 0..1 ('conv'..'relu'): parts 2x1x1 manual rolling, peak 1216, tile ws 768

// SYNTAX:      npu-opt: error: manual: line 1, column 7: expected ',' or ')', got 'x'
// SYNTAX-NEXT: {{^  \(0,1,2x$}}
// SYNTAX-NEXT: {{^        \^$}}
// RANGE:     npu-opt: error: manual: entry 1 '(0,7,1,1)': layer 7 is out of range (the layers are numbered 0 to 1)
// ORDER:     npu-opt: error: manual: entry 1 '(1,0,1,1)': the last layer 0 comes before the first layer 1
// ROWS:      npu-opt: error: manual: entry 1 '(0,1,9)': h_parts 9 exceed the 6 rows of layer 1 'relu' (nn.relu)
// OVERLAP:   npu-opt: error: manual: entry 2 '(1,1,2)': its layers overlap those of entry 1 '(0,1,1,1)'
// NO-TARGET: npu-opt: error: tile: the target option is required, e.g. tile{target="mcu-64"}
// Plugins' targets would be listed too: the entry points are ignored for this run.
// BAD-TARGET: npu-opt: error: unknown target 'no-such-npu' (available: ethos-u55-256-hee, mcu-64, mid-256)
// OPTIMISE:  npu-opt: error: tile: optimise must be 'performance' or 'size', got 'speed'
// TWICE:     npu-opt: error: tile: @main is already tiled (it has tile.{{[a-z]+}})
// CASCADE-KIND: npu-opt: error: tile: cascade must be 'rolling', 'recompute' or 'auto', got 'circular'

func.func @main(%x: tensor<1x2x6x6xf32> {nn.name = "x"}) -> (tensor<1x2x6x6xf32> {nn.name = "y"}) {
  %w = nn.constant dense<0.5> : tensor<2x2x3x3xf32>
  %c = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, name = "conv"} : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  %r = nn.relu %c {name = "relu"} : (tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  func.return %r : tensor<1x2x6x6xf32>
}

// -----

// qnn: conv 3x3 (per-channel weights and multipliers) -> depthwise 3x3 stride 2. The 3
// output rows split into stripes of 2 and 1 rows; the depthwise stripe 0 (rows 0..1) needs
// conv rows 0..3 (top pad 1), which need input rows 0..4; stripe 1 (row 2) needs conv rows
// 3..5, which need input rows 2..5: conv row 3 is computed twice (the halo).
// CASCADE-LABEL: func.func @main(%x: tensor<1x2x6x6x!qnn.uniform<i8:f32, 0.05:-3>> {nn.name = "x"})
// CASCADE:         %[[E:.*]] = tile.empty {tile.layer = 1 : i64} : tensor<1x2x3x3x!qnn.uniform<i8:f32, 0.1>>
// CASCADE-NEXT:    %[[S0:.*]] = tile.slice %x {{{.*}}offsets = array<i64: 0, 0, 0, 0>} : {{.*}} -> tensor<1x2x5x6x!qnn.uniform<i8:f32, 0.05:-3>>
// CASCADE-NEXT:    %[[W:.*]] = tile.load %w {{{.*}}from = "flash", to = "sram"} : tensor<2x2x3x3x!qnn.uniform<i8:f32:0, {0.01, 0.02}>> -> tensor<2x2x3x3x!qnn.uniform<i8:f32:0, {0.01, 0.02}>>
// CASCADE-NEXT:    %[[B:.*]] = tile.load %b {{{.*}}offsets = array<i64: 0>, from = "flash", to = "sram"} : tensor<2xi32> -> tensor<2xi32>
// CASCADE-NEXT:    %[[C0:.*]] = qnn.conv2d %[[S0]], %[[W]], %[[B]] {{{.*}}pads = array<i64: 1, 1, 0, 1>, {{.*}}multiplier = array<i64: 1073741824, 1288490189>, shift = array<i64: 36, 37>, name = "conv"} : {{.*}} -> tensor<1x2x4x6x!qnn.uniform<i8:f32, 0.1>>
// CASCADE-NEXT:    %[[DW:.*]] = tile.load %dw
// CASCADE-NEXT:    %[[D0:.*]] = qnn.conv2d %[[C0]], %[[DW]] {{{.*}}strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, {{.*}}groups = 2 : i64{{.*}} -> tensor<1x2x2x3x!qnn.uniform<i8:f32, 0.1>>
// CASCADE-NEXT:    %[[I0:.*]] = tile.insert %[[D0]] into %[[E]] {{{.*}}offsets = array<i64: 0, 0, 0, 0>}
// CASCADE-NEXT:    %[[S1:.*]] = tile.slice %x {{{.*}}offsets = array<i64: 0, 0, 2, 0>} : {{.*}} -> tensor<1x2x4x6x!qnn.uniform<i8:f32, 0.05:-3>>
// CASCADE-NEXT:    %[[C1:.*]] = qnn.conv2d %[[S1]], %[[W]], %[[B]] {{{.*}}pads = array<i64: 0, 1, 1, 1>, {{.*}} -> tensor<1x2x3x6x!qnn.uniform<i8:f32, 0.1>>
// CASCADE-NEXT:    %[[D1:.*]] = qnn.conv2d %[[C1]], %[[DW]] {{{.*}}pads = array<i64: 0, 1, 0, 0>, {{.*}} -> tensor<1x2x1x3x!qnn.uniform<i8:f32, 0.1>>
// CASCADE-NEXT:    %[[Y:.*]] = tile.insert %[[D1]] into %[[I0]] {{{.*}}offsets = array<i64: 0, 0, 2, 0>}
// CASCADE-NEXT:    func.return %[[Y]]

// Rolling buffers (manual cascades by default): stripe 0 is the same, and once the depthwise conv has
// read conv rows 0..3, their tail, row 3, is kept (tile.slice). Stripe 1 computes only
// conv rows 4..5 (input rows 3..5, bottom pad 1), and the depthwise conv reads a new
// buffer of rows 3..5: the kept row, then the new rows (tile.empty + tile.insert).
// No conv row is computed twice; the plan records the cascade kind.
// ROLLING-LABEL: func.func @main(%x: tensor<1x2x6x6x!qnn.uniform<i8:f32, 0.05:-3>> {nn.name = "x"})
// ROLLING-SAME:    parts = array<i64: 2, 1, 1>, {{.*}}overlap = 0.000000e+00 : f64, cascade = "rolling"}
// ROLLING:         %[[E:.*]] = tile.empty {tile.layer = 1 : i64} : tensor<1x2x3x3x!qnn.uniform<i8:f32, 0.1>>
// ROLLING-NEXT:    %[[S0:.*]] = tile.slice %x {{{.*}}offsets = array<i64: 0, 0, 0, 0>} : {{.*}} -> tensor<1x2x5x6x!qnn.uniform<i8:f32, 0.05:-3>>
// ROLLING-NEXT:    %[[W:.*]] = tile.load %w
// ROLLING-NEXT:    %[[B:.*]] = tile.load %b
// ROLLING-NEXT:    %[[C0:.*]] = qnn.conv2d %[[S0]], %[[W]], %[[B]] {{{.*}}pads = array<i64: 1, 1, 0, 1>, {{.*}} -> tensor<1x2x4x6x!qnn.uniform<i8:f32, 0.1>>
// ROLLING-NEXT:    %[[DW:.*]] = tile.load %dw
// ROLLING-NEXT:    %[[D0:.*]] = qnn.conv2d %[[C0]], %[[DW]] {{{.*}}pads = array<i64: 1, 1, 0, 0>, {{.*}} -> tensor<1x2x2x3x!qnn.uniform<i8:f32, 0.1>>
// ROLLING-NEXT:    %[[T:.*]] = tile.slice %[[C0]] {tile.layer = 0 : i64, tile.part = array<i64: 0, 0, 0>, offsets = array<i64: 0, 0, 3, 0>} : tensor<1x2x4x6x!qnn.uniform<i8:f32, 0.1>> -> tensor<1x2x1x6x!qnn.uniform<i8:f32, 0.1>>
// ROLLING-NEXT:    %[[I0:.*]] = tile.insert %[[D0]] into %[[E]] {{{.*}}offsets = array<i64: 0, 0, 0, 0>}
// ROLLING-NEXT:    %[[S1:.*]] = tile.slice %x {{{.*}}offsets = array<i64: 0, 0, 3, 0>} : {{.*}} -> tensor<1x2x3x6x!qnn.uniform<i8:f32, 0.05:-3>>
// ROLLING-NEXT:    %[[C1:.*]] = qnn.conv2d %[[S1]], %[[W]], %[[B]] {{{.*}}pads = array<i64: 0, 1, 1, 1>, {{.*}} -> tensor<1x2x2x6x!qnn.uniform<i8:f32, 0.1>>
// ROLLING-NEXT:    %[[R:.*]] = tile.empty {tile.layer = 0 : i64, tile.part = array<i64: 1, 0, 0>} : tensor<1x2x3x6x!qnn.uniform<i8:f32, 0.1>>
// ROLLING-NEXT:    %[[R1:.*]] = tile.insert %[[T]] into %[[R]] {{{.*}}offsets = array<i64: 0, 0, 0, 0>} : tensor<1x2x1x6x!qnn.uniform<i8:f32, 0.1>> into tensor<1x2x3x6x!qnn.uniform<i8:f32, 0.1>>
// ROLLING-NEXT:    %[[R2:.*]] = tile.insert %[[C1]] into %[[R1]] {{{.*}}offsets = array<i64: 0, 0, 1, 0>} : tensor<1x2x2x6x!qnn.uniform<i8:f32, 0.1>> into tensor<1x2x3x6x!qnn.uniform<i8:f32, 0.1>>
// ROLLING-NEXT:    %[[D1:.*]] = qnn.conv2d %[[R2]], %[[DW]] {{{.*}}pads = array<i64: 0, 1, 0, 0>, {{.*}} -> tensor<1x2x1x3x!qnn.uniform<i8:f32, 0.1>>
// ROLLING-NEXT:    %[[Y:.*]] = tile.insert %[[D1]] into %[[I0]] {{{.*}}offsets = array<i64: 0, 0, 2, 0>}
// ROLLING-NEXT:    func.return %[[Y]]

func.func @main(%x: tensor<1x2x6x6x!qnn.uniform<i8:f32, 0.05:-3>> {nn.name = "x"}) -> (tensor<1x2x3x3x!qnn.uniform<i8:f32, 0.1>> {nn.name = "y"}) {
  %w = qnn.constant {value = dense<1> : tensor<2x2x3x3xi8>} : tensor<2x2x3x3x!qnn.uniform<i8:f32:0, {0.01, 0.02}>>
  %b = qnn.constant {value = dense<[5, -5]> : tensor<2xi32>} : tensor<2xi32>
  %c = qnn.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, multiplier = array<i64: 1073741824, 1288490189>, shift = array<i64: 36, 37>, name = "conv"} : (tensor<1x2x6x6x!qnn.uniform<i8:f32, 0.05:-3>>, tensor<2x2x3x3x!qnn.uniform<i8:f32:0, {0.01, 0.02}>>, tensor<2xi32>) -> tensor<1x2x6x6x!qnn.uniform<i8:f32, 0.1>>
  %dw = qnn.constant {value = dense<2> : tensor<2x1x3x3xi8>} : tensor<2x1x3x3x!qnn.uniform<i8:f32, 0.02>>
  %d = qnn.conv2d %c, %dw {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64, multiplier = array<i64: 1431655765>, shift = array<i64: 35>, name = "dw"} : (tensor<1x2x6x6x!qnn.uniform<i8:f32, 0.1>>, tensor<2x1x3x3x!qnn.uniform<i8:f32, 0.02>>) -> tensor<1x2x3x3x!qnn.uniform<i8:f32, 0.1>>
  func.return %d : tensor<1x2x3x3x!qnn.uniform<i8:f32, 0.1>>
}

// -----

// An NHWC input transposed to NCHW for a max pool 3x3 stride 2: the transpose is folded
// into the stripes (each transposes its own slice of the NHWC input), so the full NCHW
// copy never exists. Pool stripe 0 (rows 0..1) reads rows 0..3, stripe 1 (row 2) rows 3..5.
// CASCADE-LABEL: func.func @main(%x: tensor<1x6x6x2xf32> {nn.name = "x"})
// CASCADE-NOT:     nn.transpose %x
// CASCADE:         %[[S0:.*]] = tile.slice %x {{{.*}}offsets = array<i64: 0, 0, 0, 0>} : tensor<1x6x6x2xf32> -> tensor<1x4x6x2xf32>
// CASCADE-NEXT:    %[[T0:.*]] = nn.transpose %[[S0]] {{{.*}}perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x6x2xf32>) -> tensor<1x2x4x6xf32>
// CASCADE-NEXT:    %[[P0:.*]] = nn.max_pool2d %[[T0]] {{{.*}}pads = array<i64: 1, 1, 0, 0>, {{.*}} -> tensor<1x2x2x3xf32>
// CASCADE-NEXT:    %[[R0:.*]] = nn.relu %[[P0]]
// CASCADE-NEXT:    tile.insert %[[R0]]
// CASCADE-NEXT:    %[[S1:.*]] = tile.slice %x {{{.*}}offsets = array<i64: 0, 3, 0, 0>} : tensor<1x6x6x2xf32> -> tensor<1x3x6x2xf32>
// CASCADE-NEXT:    %[[T1:.*]] = nn.transpose %[[S1]] {{.*}} -> tensor<1x2x3x6xf32>
// CASCADE-NEXT:    %[[P1:.*]] = nn.max_pool2d %[[T1]] {{{.*}}pads = array<i64: 0, 1, 0, 0>, {{.*}} -> tensor<1x2x1x3xf32>

func.func @main(%x: tensor<1x6x6x2xf32> {nn.name = "x"}) -> (tensor<1x2x3x3xf32> {nn.name = "y"}) {
  %t = nn.transpose %x {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x6x6x2xf32>) -> tensor<1x2x6x6xf32>
  %p = nn.max_pool2d %t {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, name = "pool"} : (tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32>
  %a = nn.relu %p {name = "relu"} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  func.return %a : tensor<1x2x3x3xf32>
}

// -----

// Weight streaming: the 1x1 conv's 16 KiB of f32 weights exceed sram_limit = 12288, so
// auto mode splits its output channels into the fewest parts that fit: 4 slices of 16
// channels, each loaded from flash with its bias slice (4096 x 2 + 64 x 2 double-buffered
// + input 1024 + output 256 + accumulators 256 = 9856 bytes; 3 parts would need 13312).
// STREAM-LABEL: func.func @main(%x: tensor<1x64x2x2xf32> {nn.name = "x"})
// STREAM-SAME:    {layers = array<i64: 0, 0>, name = "conv", parts = array<i64: 1, 1, 4>, working_set = 9856 : i64
// STREAM:         %[[E:.*]] = tile.empty {tile.layer = 0 : i64} : tensor<1x64x2x2xf32>
// STREAM-NEXT:    %[[W0:.*]] = tile.load %w {tile.layer = 0 : i64, offsets = array<i64: 0, 0, 0, 0>, from = "flash", to = "sram"} : tensor<64x64x1x1xf32> -> tensor<16x64x1x1xf32>
// STREAM-NEXT:    %[[B0:.*]] = tile.load %b {tile.layer = 0 : i64, offsets = array<i64: 0>, from = "flash", to = "sram"} : tensor<64xf32> -> tensor<16xf32>
// STREAM-NEXT:    %[[C0:.*]] = nn.conv2d %x, %[[W0]], %[[B0]] {tile.layer = 0 : i64, tile.part = array<i64: 0, 0, 0>, {{.*}} -> tensor<1x16x2x2xf32>
// STREAM-NEXT:    %[[I0:.*]] = tile.insert %[[C0]] into %[[E]] {{{.*}}offsets = array<i64: 0, 0, 0, 0>}
// STREAM-NEXT:    %[[W1:.*]] = tile.load %w {{{.*}}offsets = array<i64: 16, 0, 0, 0>{{.*}} -> tensor<16x64x1x1xf32>
// STREAM-NEXT:    %[[B1:.*]] = tile.load %b {{{.*}}offsets = array<i64: 16>
// STREAM-NEXT:    %[[C1:.*]] = nn.conv2d %x, %[[W1]], %[[B1]] {tile.layer = 0 : i64, tile.part = array<i64: 0, 0, 1>
// STREAM-NEXT:    tile.insert %[[C1]] into %[[I0]] {{{.*}}offsets = array<i64: 0, 16, 0, 0>}
// STREAM-COUNT-2: nn.conv2d %x
// STREAM:         %[[R:.*]] = nn.relu %c {tile.layer = 1 : i64, name = "relu"}
// STREAM-NEXT:    func.return %[[R]]

func.func @main(%x: tensor<1x64x2x2xf32> {nn.name = "x"}) -> (tensor<1x64x2x2xf32> {nn.name = "y"}) {
  %w = nn.constant dense<0.25> : tensor<64x64x1x1xf32>
  %b = nn.constant dense<1.0> : tensor<64xf32>
  %c = nn.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, name = "conv"} : (tensor<1x64x2x2xf32>, tensor<64x64x1x1xf32>, tensor<64xf32>) -> tensor<1x64x2x2xf32>
  %r = nn.relu %c {name = "relu"} : (tensor<1x64x2x2xf32>) -> tensor<1x64x2x2xf32>
  func.return %r : tensor<1x64x2x2xf32>
}

  func.return %r : tensïr<1x64x2x2xf32>

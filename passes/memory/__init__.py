"""Memory planning: schedule, live ranges, aliasing and placement of buffers in regions."""

"""npuc's dialects: one module per IR level."""

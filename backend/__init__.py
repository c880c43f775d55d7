"""npuc backend."""

"""npuc runtime."""

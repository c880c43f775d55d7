"""npuc passes."""

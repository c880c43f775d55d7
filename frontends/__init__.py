"""npuc frontends."""

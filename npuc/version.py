"""npuc's version (pyproject.toml's), for the tools and the files they write."""

__version__ = "0.1.0"

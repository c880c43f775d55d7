"""A plugin whose import fails: it needs a package that is not installed."""

import npuc_example_ops_missing_dependency  # noqa: F401

plugin = None

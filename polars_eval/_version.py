"""The package's version (one place: the package root and the report's footer read it)."""

__version__ = "0.1.0"

"""The package version (part of every disk-cache key)."""

__version__ = "0.2.0"

"""The symbolic interpreter."""

"""User-facing errors and logging."""

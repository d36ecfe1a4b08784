"""What runs on every call: cache entries, guard dispatch, recompiles."""

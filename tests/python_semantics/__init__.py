"""Python-semantics corpus: standard library and pattern matching inside compiled frames."""

"""Graph breaks and side effects (issue 4): frames split into graphs and
residual Python, with side effects replayed faithfully."""

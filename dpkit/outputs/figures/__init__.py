"""Topic figures: each function receives computed results and returns a matplotlib Figure."""

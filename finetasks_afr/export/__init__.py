"""Selections exported for other harnesses (lm-evaluation-harness)."""

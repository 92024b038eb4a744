"""FineTasks signal analysis: from per-checkpoint scores to a justified choice of tasks per language."""

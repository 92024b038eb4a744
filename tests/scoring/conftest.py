"""Tests of finetasks_afr/scoring/: the scoring core against direct recomputations from log-probabilities, the engine,
the lighteval 0.13 fixes (each also shown still broken in stock lighteval), partial scoring, the vLLM check.
"""

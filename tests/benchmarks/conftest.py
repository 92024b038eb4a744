"""Tests of finetasks_afr/benchmarks/: every family against real rows or rows in its published schema, gold answers
decoded independently, the translation, perplexity and generative tasks.
"""

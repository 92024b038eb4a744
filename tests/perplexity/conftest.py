"""Tests of finetasks_afr/perplexity/: recommendation by (pseudo-)perplexity, rank agreement against an independent
RBO, LongPPL preparation and its tasks.
"""

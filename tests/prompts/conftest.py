"""Tests of finetasks_afr/prompts/: languages and literals, human-made prompt words, text cleaning on real rows, the
few-shot sampler.
"""

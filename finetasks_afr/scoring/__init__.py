"""Scoring and the lighteval integration: the one causal-LM scoring core, the sweep engine (lighteval's
transformers model with shared-prefix scoring), the run-time fixes for lighteval 0.13 and vLLM, partial scoring,
the in-process runtime and the per-phase clock. Task definitions sit above it: they name the metrics it fixes.
"""

"""The score table, the contract between evaluation and analysis: its schema and validation, what each metric
name means, the checkpoint identities (run, seed, step) sweeps discover, and the lm-evaluation-harness readers.
"""

"""Tests of analysis/scores/: the score table's schema and its named errors, checkpoint discovery, the
lm-evaluation-harness readers on its real output layout.
"""

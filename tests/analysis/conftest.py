"""Tests of analysis/: every statistic against hand-computed cases, scipy and an independent pandas
implementation; selection, aggregation, the gap to English, figures, the report, the notebook.
"""

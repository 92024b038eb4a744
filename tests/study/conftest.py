"""Tests of finetasks_afr/study/: the design, training, the truth check, the CI slice end to end, and the committed
results in docs/study/.
"""

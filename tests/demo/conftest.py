"""Tests of finetasks_afr/demo/: the invented world, the simulated sweep, the demo's truth check, and a fresh demo's
output ($FINETASKS_AFR_DEMO_DIR, set by CI).
"""

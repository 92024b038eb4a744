"""Tests of finetasks_afr/tasks.py, the suite lighteval loads: prompt snapshots, task order, 0-shot-only tasks."""

"""Tests of finetasks_afr/sweep/: sweeps end to end (local processes and a real one-node Slurm), resumption, faults,
the per-phase clock, collection into the score table.
"""

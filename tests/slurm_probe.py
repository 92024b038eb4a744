"""Whether a usable Slurm cluster answers here (the one-node cluster of `.ci/slurm.sh` in CI)."""

from __future__ import annotations

import shutil
import subprocess


def slurm_problem(partition: str = "debug") -> str | None:
    """Why no usable Slurm cluster answers here, or None when one does."""
    if shutil.which("sinfo") is None:
        return "Slurm is not installed (`sinfo` is not on PATH)"
    try:
        run = subprocess.run(
            ["sinfo", "-h", "-p", partition, "-o", "%T"], capture_output=True, text=True, timeout=20, check=False
        )
    except subprocess.TimeoutExpired:
        return "the Slurm controller does not answer (`sinfo` timed out)"
    if run.returncode != 0:
        return f"the Slurm controller does not answer: {run.stderr.strip() or run.stdout.strip()}"
    states = run.stdout.split()
    if not any(state in {"idle", "mixed", "allocated", "completing"} for state in states):
        return f"no usable node in Slurm partition {partition!r} (node states: {states or 'none'})"
    return None

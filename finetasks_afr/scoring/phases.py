"""Where a checkpoint's time goes: exclusive wall time per named phase, measured by the sweep itself.

A sweep evaluating a checkpoint activates one `PhaseClock`; code anywhere below it (the engine, the pipeline and
tracker subclasses of `finetasks_afr.scoring.lighteval_runtime`, the forward-pass hooks, the garbage collector's
callback) marks its work with `phase(name)`. Phases nest and time is exclusive: a second spent in a forward pass inside
the scoring core counts for `forward` only, so the phases of a checkpoint add up to its wall time and nothing is counted
twice. With no clock active (lighteval's CLI, tests), `phase` costs one global lookup.

This module imports nothing heavy: the engine uses it outside sweeps too.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Iterator
from typing import Any

# The phases a sweep reports, in the order a checkpoint meets them (bench/bench_sweep.py prints them so).
LOAD = "model load"
PIPELINE = "pipeline"  # building a Pipeline (tasks, documents) or re-seeding a kept one
TRACKER = "tracker"  # the results tracker: built, and told the tasks and the model
REQUESTS = "requests"  # the engine's requests: prompts and their tokens
FORWARD = "forward"  # inside the model's forward passes (hooks on the torch module)
SCORING = "scoring"  # the scoring core around the passes: tensors in, log-softmax, gathering out
RESPONSES = "responses"  # ModelResponses built from the scores
MODEL_RUN = "model run (rest)"  # lighteval's model call around the engine: its cache, the compat fixes, PMI requests
SAMPLE_METRICS = "sample metrics"
CORPUS_METRICS = "corpus metrics"
STDERR = "bootstrap stderr"
DETAILS = "details"  # per-sample details and their hashes
RESULTS_FILE = "results file"
COMMIT = "commit"  # staging the part, its manifest, the rename into results/
GC = "garbage collection"
OTHER = "other"  # whatever no phase claims

ORDER = (LOAD, PIPELINE, TRACKER, REQUESTS, FORWARD, SCORING, RESPONSES, MODEL_RUN, SAMPLE_METRICS, CORPUS_METRICS,
         STDERR, DETAILS, RESULTS_FILE, COMMIT, GC, OTHER)  # fmt: skip


class PhaseClock:
    """Seconds per phase, exclusive (time goes to the innermost open phase); time outside any phase is `other`."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._stack: list[str] = [OTHER]
        self._since = time.perf_counter()

    def _switch(self) -> None:
        now = time.perf_counter()
        name = self._stack[-1]
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self._since
        self._since = now

    def enter(self, name: str) -> None:
        self._switch()
        self._stack.append(name)

    def exit(self) -> None:
        self._switch()
        if len(self._stack) > 1:  # a forward pass that raised leaves its phase open; the root stays
            self._stack.pop()

    def stop(self) -> dict[str, float]:
        """Close every open phase; the seconds per phase, in `ORDER` (unknown names after)."""
        self._switch()
        del self._stack[1:]
        known = [name for name in ORDER if name in self.seconds]
        return {name: self.seconds[name] for name in known + sorted(set(self.seconds) - set(known))}

    def _gc(self, step: str, _: dict[str, Any]) -> None:
        if step == "start":
            self.enter(GC)
        else:
            self.exit()


_ACTIVE: PhaseClock | None = None


@contextlib.contextmanager
def clock() -> Iterator[PhaseClock]:
    """Activate a clock for the block (one at a time; an inner one takes over until it ends), with the garbage
    collector's pauses as their own phase."""
    global _ACTIVE
    outer, _ACTIVE = _ACTIVE, PhaseClock()
    active = _ACTIVE
    gc.callbacks.append(active._gc)
    try:
        yield active
    finally:
        gc.callbacks.remove(active._gc)
        active.stop()
        _ACTIVE = outer


def enter(name: str) -> None:
    """Open phase `name` on the active clock, if any (for hooks that cannot hold a `with` block)."""
    if _ACTIVE is not None:
        _ACTIVE.enter(name)


def exit_phase() -> None:
    """Close the innermost phase opened by `enter`, if a clock is active."""
    if _ACTIVE is not None:
        _ACTIVE.exit()


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Count the block's time for `name` on the active clock (none: it runs untimed)."""
    active = _ACTIVE
    if active is None:
        yield
        return
    active.enter(name)
    try:
        yield
    finally:
        active.exit()

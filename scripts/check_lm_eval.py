"""The real lm-evaluation-harness on HF Trainer checkpoints, then collect, select and make select-tasks on its folders.

Run with the lm-eval environment's Python (`bash scripts/lmeval_env.sh`; `make test-lm-eval` does both):

    .venv-lmeval/bin/python scripts/check_lm_eval.py [--out out/lm-eval-check] [--cli .venv/bin/finetasks-afr]

1. Trains tiny Llamas (about 150K parameters, a byte-level BPE tokenizer of 512 tokens trained here on the training
   text) with the HF `transformers.Trainer` on UNPACKED data: one SIB-200 training sentence per example (Hausa,
   Yoruba, Swahili in two proportions: runs mix-a and mix-b), padded per batch, `include_num_input_tokens_seen=True`
   (transformers 5.24 maps True to "all": padded input ids are counted, so a seed's shuffle changes its counts). Two
   seeds per run, three saved checkpoints each: OUT/runs/<run>/seed-<n>/checkpoint-<step>/ with trainer_state.json.
   Asserted: the seeds of a run record different `num_input_tokens_seen` at every step, and all twelve counts differ,
   so a checkpoint's count is its fingerprint (a results file read as another checkpoint's would show in its tokens).
2. Runs the real `lm_eval` CLI (lm-eval 0.4.13, `--model hf`) on every checkpoint, `--output_path` the checkpoint
   folder, `--limit 50 --log_samples`, with lm-eval's OWN AfroBench prompt_1 task files for sib, afrisenti and
   masakhanews (copied from the installed package into OUT/tasks, `--include_path`) in which only the dataset source
   changed: `dataset_path: json`, `dataset_name: null` and `dataset_kwargs.data_files` pointing at JSON lines built
   here from ../shared/data (the raw releases, whose columns are the hub datasets' fields: sib200 index_id/category/
   text, afrisenti tweet/label, masakhanews category/headline/text/url; every target checked against the task's
   doc_to_choice). Two things about that data: the releases' test files are sorted by label (the first 50 rows of
   sib200 hau_Latn are all science/technology, of afrisenti hau all positive), so `--limit 50` on them would score
   one label: the test rows are shuffled with a fixed seed per file; and AfroBench's afrisenti few-shot split is
   `train`, which the release here lacks (see FAMILIES). One group file of ours (OUT/tasks/check_lm_eval_group.yaml,
   shaped like AfroBench's own group files) aggregates the nine tasks, so lm-eval writes a group row the readers
   must skip. lm-eval writes OUT/runs/<run>/seed-<n>/checkpoint-<N>/<model_name_sanitized>/results_<datetime>.json
   and one samples_<task>_<datetime>.jsonl per task beside it (asserted: 50 lines each, and config.model_args names
   the folder above).
3. Runs `finetasks-afr collect OUT/runs --out OUT/scores.parquet`, `finetasks-afr select OUT/runs --out ...` and
   `make select-tasks SCORES=OUT/scores.parquet OUT=...` (the main .venv's CLI, as a user runs it); each must exit 0.
4. Every row of the collected table must equal an independent read of lm-eval's JSON (a plain json loop below:
   results[task]["<metric>,none"] and "<metric>_stderr,none", group rows skipped, fewshot from n-shot, run/seed/step
   from the folder path, tokens from the checkpoint's trainer_state.json): exact float equality, same row count.

Offline: HF_HUB_OFFLINE=1, HF_DATASETS_OFFLINE=1, TRANSFORMERS_OFFLINE=1, HF_EVALUATE_OFFLINE=1; the datasets cache
goes to OUT/hf-cache. Exit 0 when everything holds, 1 with the reason otherwise. A summary goes to OUT/check.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
LIMIT = 50
STEPS = (10, 20, 30)  # saved checkpoints (save_steps 10, max_steps 30)
BATCH = 8
SEEDS = (1, 2)
# run -> share of the training examples per language (SIB-200 training split folders)
MIXES: dict[str, dict[str, float]] = {
    "mix-a": {"hau_Latn": 0.6, "yor_Latn": 0.2, "swh_Latn": 0.2},
    "mix-b": {"hau_Latn": 0.2, "yor_Latn": 0.2, "swh_Latn": 0.6},
}
EXAMPLES_PER_RUN = 600
LANGUAGES = ("hau", "yor", "swa")  # the lm-eval task names' codes
GROUP = "check_lm_eval_group"


@dataclass(frozen=True)
class Family:
    """One AfroBench family: its folder under lm_eval/tasks/afrobench, the base YAML its language files include, the
    raw data folder under ../shared/data and the raw file of each split lm-eval reads."""

    folder: str
    base: str
    data: str
    splits: tuple[tuple[str, str], ...] = (("validation", "dev.tsv"), ("test", "test.tsv"))


FAMILIES = (
    Family("sib", "sib", "sib200"),
    # AfroBench's afrisenti sets fewshot_split: train, and lm-eval builds the few-shot pool at task build even at 0
    # shots (KeyError 'train' without it); the raw release here has dev and test only, so `train` is served from
    # dev.tsv: never sampled at num_fewshot 0, so no score depends on it.
    Family(
        "afrisenti", "afrisenti", "afrisenti", (("train", "dev.tsv"), ("validation", "dev.tsv"), ("test", "test.tsv"))
    ),
    Family("masakhanews", "masakhanews", "masakhanews"),
)
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_EVALUATE_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


class CheckError(RuntimeError):
    """A failed check; the message says what differed."""


def log(message: str) -> None:
    print(f"check_lm_eval: {message}", flush=True)


# ------------------------------------------------------------------------------------ data


def read_tsv(path: Path) -> list[dict[str, str]]:
    """A raw release's TSV with a header (CSV-style quoting, as pandas writes it)."""
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def load_task_yaml(text: str) -> dict[str, Any]:
    """An lm-eval task YAML, its `!function` tags read as plain strings (only the other keys are needed here)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def tagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> str:
        return f"!{suffix} {getattr(node, 'value', '')}"

    Loader.add_multi_constructor("!", tagged)
    data = yaml.load(text, Loader=Loader)
    if not isinstance(data, dict):
        raise CheckError(f"not a task YAML mapping: {text[:200]!r}")
    return data


def build_tasks(lm_eval_tasks: Path, shared: Path, out: Path) -> list[str]:
    """Copy lm-eval's AfroBench prompt_1 files of FAMILIES x LANGUAGES into `out`, with only the dataset source
    pointed at JSON lines built from the raw releases under `shared`; returns the task names."""
    tasks: list[str] = []
    data_root = out / "data"
    for family in FAMILIES:
        source = lm_eval_tasks / "afrobench" / family.folder / "prompt_1"
        target = out / family.folder / "prompt_1"
        target.mkdir(parents=True)
        shutil.copy2(source / family.base, target / family.base)  # unchanged (dataset_path is overridden below)
        shutil.copy2(source / "utils.py", target / "utils.py")  # unchanged (`!function utils.weighted_f1_score`)
        base = load_task_yaml((source / family.base).read_text(encoding="utf-8"))
        choices = [str(c) for c in base["doc_to_choice"]]
        target_field = str(base["doc_to_target"])
        for code in LANGUAGES:
            name = f"{family.folder}_{code}.yaml"
            text = (source / name).read_text(encoding="utf-8")
            config = load_task_yaml(text)
            dataset = str(config["dataset_name"])  # the hub config: hau_Latn, swh_Latn (sib), hau, swa (others)
            files: dict[str, str] = {}
            for split, raw_name in family.splits:
                rows: list[dict[str, Any]] = list(read_tsv(shared / family.data / dataset / raw_name))
                if not rows:
                    raise CheckError(f"{shared / family.data / dataset / raw_name}: no rows")
                bad = sorted({row[target_field] for row in rows} - set(choices))
                if bad:
                    raise CheckError(f"{family.data}/{dataset}/{raw_name}: labels {bad} not in doc_to_choice {choices}")
                if family.data == "sib200":  # the hub's index_id is an integer
                    rows = [{**row, "index_id": int(row["index_id"])} for row in rows]
                if split == "test":  # sorted by label in the releases: --limit would score one label (see above)
                    random.Random(f"{family.data}/{dataset}").shuffle(rows)
                path = data_root / family.data / dataset / f"{split}.jsonl"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
                files[split] = str(path.resolve())
            # the task file as lm-eval ships it, minus its dataset_name line, plus the local source
            kept = [line for line in text.splitlines() if not line.startswith("dataset_name:")]
            kept += [
                "# check_lm_eval.py: only the dataset source changed (local JSON lines built from ../shared/data)",
                "dataset_path: json",
                "dataset_name: null",
                f"dataset_kwargs: {json.dumps({'data_files': files})}",
            ]
            (target / name).write_text("\n".join(kept) + "\n", encoding="utf-8")
            tasks.append(str(config["task"]))
    group = {
        "group": GROUP,
        "task": tasks,
        "aggregate_metric_list": [{"metric": "acc", "aggregation": "mean", "weight_by_size": True}],
        "metadata": {"version": 1},
    }
    (out / f"{GROUP}.yaml").write_text(json.dumps(group, indent=2) + "\n", encoding="utf-8")  # JSON is YAML
    return tasks


# ------------------------------------------------------------------------------------ training


def training_texts(shared: Path, mix: Mapping[str, float], seed: int) -> list[str]:
    """EXAMPLES_PER_RUN SIB-200 training sentences in the run's proportions (drawn with a per-run seed: both seeds of
    a run train on the same examples, in their own order)."""
    rng = random.Random(seed)
    texts: list[str] = []
    for folder, share in mix.items():
        rows = [row["text"] for row in read_tsv(shared / "sib200" / folder / "train.tsv")]
        texts += rng.sample(rows, round(EXAMPLES_PER_RUN * share))
    rng.shuffle(texts)
    return texts


def train_tokenizer(shared: Path, out: Path) -> Path:
    """A byte-level BPE tokenizer (512 tokens) trained on the three languages' SIB-200 training text."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    texts = [row["text"] for folder in MIXES["mix-a"] for row in read_tsv(shared / "sib200" / folder / "train.tsv")]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=512,
        special_tokens=["<pad>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    fast.save_pretrained(out)
    return out


def train_run(root: Path, tokenizer_dir: Path, shared: Path, run: str, seed: int) -> list[Path]:
    """One seed of one run with the HF Trainer on unpacked, per-batch padded examples; its checkpoint folders."""
    import datasets
    import transformers
    from transformers import (
        AutoTokenizer,
        DataCollatorForLanguageModeling,
        LlamaConfig,
        LlamaForCausalLM,
        PrinterCallback,
        Trainer,
        TrainingArguments,
    )

    datasets.disable_progress_bars()
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    texts = training_texts(shared, MIXES[run], seed=sum(map(ord, run)))
    encoded = datasets.Dataset.from_dict({"text": texts}).map(
        lambda batch: tokenizer([f"{t}{tokenizer.eos_token}" for t in batch["text"]], truncation=True, max_length=256),
        batched=True,
        remove_columns=["text"],
    )
    transformers.set_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=1024,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config)
    args = TrainingArguments(
        output_dir=str(root / run / f"seed-{seed}"),
        max_steps=STEPS[-1],
        save_strategy="steps",
        save_steps=STEPS[0],
        save_only_model=True,
        per_device_train_batch_size=BATCH,
        learning_rate=3e-3,
        warmup_steps=2,
        weight_decay=0.0,
        logging_steps=STEPS[0],
        seed=seed,
        include_num_input_tokens_seen=True,  # True -> "all": padded input ids counted
        report_to="none",
        use_cpu=True,
        dataloader_num_workers=0,
        disable_tqdm=True,
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=encoded,
        data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False),
        processing_class=tokenizer,
    )
    trainer.remove_callback(PrinterCallback)  # the loss lines; trainer_state.json keeps them
    trainer.train()
    return [root / run / f"seed-{seed}" / f"checkpoint-{step}" for step in STEPS]


def recorded_tokens(checkpoint: Path) -> int:
    state = json.loads((checkpoint / "trainer_state.json").read_text(encoding="utf-8"))
    seen = state.get("num_input_tokens_seen")
    if not isinstance(seen, int) or seen <= 0:
        raise CheckError(f"{checkpoint}/trainer_state.json: num_input_tokens_seen is {seen!r}")
    return seen


def check_token_counts(root: Path) -> dict[str, dict[str, dict[int, int]]]:
    """run -> seed -> step -> num_input_tokens_seen; the seeds of a run must differ at every step."""
    counts: dict[str, dict[str, dict[int, int]]] = {}
    for run in MIXES:
        counts[run] = {
            f"seed-{seed}": {
                step: recorded_tokens(root / run / f"seed-{seed}" / f"checkpoint-{step}") for step in STEPS
            }
            for seed in SEEDS
        }
        for step in STEPS:
            seen = [counts[run][f"seed-{seed}"][step] for seed in SEEDS]
            if len(set(seen)) != len(seen):
                raise CheckError(
                    f"{run} step {step}: the seeds recorded the same token count {seen}; the check needs seeds that "
                    "differ (unpacked data, per-batch padding)"
                )
        for seed, by_step in counts[run].items():
            values = [by_step[step] for step in STEPS]
            if values != sorted(set(values)):
                raise CheckError(f"{run} {seed}: token counts do not increase with the step: {values}")
    every = [tokens for run in counts.values() for by_step in run.values() for tokens in by_step.values()]
    if len(set(every)) != len(every):
        raise CheckError(
            f"two checkpoints recorded the same token count ({sorted(every)}); the check uses the counts as each "
            "checkpoint's fingerprint (a results file read as another checkpoint's shows in its tokens)"
        )
    return counts


# ------------------------------------------------------------------------------------ running commands


def run_command(command: Sequence[str], env: Mapping[str, str], what: str, log_path: Path) -> float:
    """Run a command, its output to `log_path`; exit status 0 or CheckError with the output's tail."""
    started = time.perf_counter()
    with log_path.open("w", encoding="utf-8") as handle:
        handle.write("$ " + " ".join(command) + "\n")
        handle.flush()
        done = subprocess.run(command, env=dict(env), stdout=handle, stderr=subprocess.STDOUT, cwd=PROJECT)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        tail = "\n".join(log_path.read_text(encoding="utf-8").splitlines()[-30:])
        raise CheckError(f"{what} exited {done.returncode} after {seconds:.0f} s (log: {log_path}):\n{tail}")
    return seconds


def lm_eval_command(lm_eval: Path, checkpoint: Path, include: Path) -> list[str]:
    return [
        str(lm_eval),
        "--model", "hf",
        "--model_args", f"pretrained={checkpoint.resolve()},dtype=float32",
        "--tasks", GROUP,
        "--device", "cpu",
        "--batch_size", "32",
        "--output_path", str(checkpoint.resolve()),
        "--limit", str(LIMIT),
        "--log_samples",
        "--include_path", str(include.resolve()),
        "--seed", "1234",
    ]  # fmt: skip


# ------------------------------------------------------------------------------------ the independent read


Key = tuple[str, int, int, str, int, str]  # run, seed, step, task, fewshot, metric


Expected = tuple[float, float | None, int, int | None]  # score, stderr, tokens, documents scored when --limit cut


def read_lm_eval_json(root: Path) -> tuple[dict[Key, Expected], int]:
    """(run, seed, step, task, fewshot, metric) -> (score, stderr, tokens, sampled documents) from every
    results_*.json under root: results[task]["<metric>,none"], group rows skipped, run/seed/step from the folder
    path, tokens from the checkpoint's trainer_state.json, the documents n-samples[task] says --limit scored when
    fewer than the task's (else None); and the number of group rows skipped."""
    expected: dict[Key, Expected] = {}
    skipped = 0
    for path in sorted(root.glob("*/seed-*/checkpoint-*/*/results_*.json")):
        run, seed_dir, checkpoint_dir = path.relative_to(root).parts[:3]
        seed, step = int(seed_dir.removeprefix("seed-")), int(checkpoint_dir.removeprefix("checkpoint-"))
        tokens = recorded_tokens(root / run / seed_dir / checkpoint_dir)
        data = json.loads(path.read_text(encoding="utf-8"))
        pretrained = str(data["config"]["model_args"]["pretrained"])
        if Path(pretrained) != (root / run / seed_dir / checkpoint_dir).resolve():
            raise CheckError(f"{path}: config.model_args.pretrained is {pretrained}, not the folder it lies in")
        samples = sorted(path.parent.glob("samples_*.jsonl"))
        lines = {len(p.read_text(encoding="utf-8").splitlines()) for p in samples}
        if len(samples) != len(data["configs"]) or lines != {LIMIT}:
            raise CheckError(
                f"{path.parent}: {len(samples)} samples files of {sorted(lines)} lines, expected one of {LIMIT} lines "
                f"per task ({len(data['configs'])})"
            )
        groups = set(data.get("groups", {})) | {g for g, children in data.get("group_subtasks", {}).items() if children}
        for task, entry in data["results"].items():
            if task in groups:
                skipped += 1
                continue
            fewshot = int(data["n-shot"][task])
            counts = data["n-samples"][task]
            sampled = int(counts["effective"]) if counts["effective"] < counts["original"] else None
            for key, value in entry.items():
                metric, comma, filter_name = key.partition(",")
                if not comma or metric.endswith("_stderr"):
                    continue
                if filter_name != "none":
                    raise CheckError(f"{path}: {task} reports {key}; this check expects the filter 'none' only")
                stderr = entry.get(f"{metric}_stderr,none")
                slot = (run, seed, step, task, fewshot, metric)
                if slot in expected:
                    raise CheckError(f"{path}: a second results file for {slot}")
                expected[slot] = (float(value), None if stderr in (None, "N/A") else float(stderr), tokens, sampled)
    return expected, skipped


def compare(scores: Path, expected: Mapping[Key, Expected]) -> int:
    """Every row of the collected table equals the independent read (exact floats, and the sampled documents of
    --limit in `sampled_documents`); the row counts match."""
    import pyarrow.parquet as pq

    rows = pq.read_table(scores).to_pylist()
    if len(rows) != len(expected):
        raise CheckError(f"{scores}: {len(rows)} rows, the JSON files hold {len(expected)} (task, metric) values")
    seen: set[Key] = set()
    for row in rows:
        slot: Key = (row["run"], row["seed"], row["step"], row["task"], row["fewshot"], row["metric"])
        if slot not in expected:
            raise CheckError(f"{scores}: row {slot} is in no lm-eval results file")
        if slot in seen:
            raise CheckError(f"{scores}: row {slot} twice")
        seen.add(slot)
        language = row["task"].removesuffix("_prompt_1").rsplit("_", 1)[-1]  # sib_hau_prompt_1 -> hau
        if row["language"] != language:
            raise CheckError(f"{scores}: {slot}: language {row['language']!r}, the task name says {language!r}")
        got = (row["score"], row["stderr"], row["tokens"], row.get("sampled_documents"))
        if got != expected[slot]:
            raise CheckError(
                f"{scores}: {slot}: (score, stderr, tokens, sampled_documents) {got} != the JSON's {expected[slot]}"
            )
    return len(rows)


# ------------------------------------------------------------------------------------ main


def describe_outputs(checkpoint: Path) -> dict[str, Any]:
    """Where lm-eval wrote its files for one checkpoint, and the keys of one sample line."""
    files = sorted(p.relative_to(checkpoint).as_posix() for p in checkpoint.glob("*/*") if p.is_file())
    samples = sorted(checkpoint.glob("*/samples_*.jsonl"))
    first = json.loads(samples[0].read_text(encoding="utf-8").splitlines()[0]) if samples else {}
    return {"files": files, "sample_keys": sorted(first)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=PROJECT / "out" / "lm-eval-check", help="work folder (emptied)")
    parser.add_argument(
        "--shared", type=Path, help="the real data (default: $FINETASKS_AFR_SHARED_DATA, ../shared/data)"
    )
    parser.add_argument("--cli", type=Path, default=PROJECT / ".venv" / "bin" / "finetasks-afr")
    parser.add_argument("--lm-eval", type=Path, default=Path(sys.executable).parent / "lm_eval")
    parser.add_argument("--jobs", type=int, default=2, help="lm_eval processes at once (one thread each when > 1)")
    parser.add_argument("--make", default="make", help="make, for `make select-tasks` (VENV from the environment)")
    args = parser.parse_args(argv)
    default_shared = os.environ.get("FINETASKS_AFR_SHARED_DATA") or PROJECT.parent / "shared" / "data"
    shared = Path(args.shared or default_shared).resolve()
    if not (shared / "sib200").is_dir():
        parser.error(f"no real data at {shared} (../shared/data or FINETASKS_AFR_SHARED_DATA)")
    started = time.perf_counter()
    out: Path = args.out.resolve()
    if out.exists():
        shutil.rmtree(out)
    (out / "logs").mkdir(parents=True)
    env = {**os.environ, **OFFLINE, "HF_DATASETS_CACHE": str(out / "hf-cache")}
    os.environ.update(env)
    timings: dict[str, float] = {}
    summary: dict[str, Any] = {"ok": False}
    try:
        import lm_eval

        tasks = build_tasks(Path(lm_eval.__file__).parent / "tasks", shared, out / "tasks")
        log(f"{len(tasks)} AfroBench prompt_1 tasks with local data: {', '.join(tasks)}")

        t0 = time.perf_counter()
        root = out / "runs"
        tokenizer_dir = train_tokenizer(shared, out / "tokenizer")
        checkpoints = [c for run in MIXES for seed in SEEDS for c in train_run(root, tokenizer_dir, shared, run, seed)]
        timings["train_s"] = time.perf_counter() - t0
        counts = check_token_counts(root)
        summary["num_input_tokens_seen"] = counts
        log(f"trained {len(checkpoints)} checkpoints in {timings['train_s']:.0f} s; tokens seen: {json.dumps(counts)}")

        t0 = time.perf_counter()
        lm_eval_env = {**env, "OMP_NUM_THREADS": "1"} if args.jobs > 1 else env  # one core per concurrent lm_eval

        def evaluate(checkpoint: Path) -> str:
            label = "_".join(checkpoint.relative_to(root).parts)
            seconds = run_command(
                lm_eval_command(args.lm_eval, checkpoint, out / "tasks"),
                lm_eval_env,
                f"lm_eval on {checkpoint}",
                out / "logs" / f"lm_eval_{label}.log",
            )
            return f"lm_eval {checkpoint.relative_to(root)}: {seconds:.0f} s"

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for line in pool.map(evaluate, checkpoints):
                log(line)
        timings["lm_eval_s"] = time.perf_counter() - t0
        summary["lm_eval_output"] = describe_outputs(checkpoints[0])

        t0 = time.perf_counter()
        scores = out / "scores.parquet"
        cli = str(args.cli.resolve())
        run_command(
            [cli, "collect", str(root), "--out", str(scores)],
            env,
            "finetasks-afr collect",
            out / "logs" / "collect.log",
        )
        run_command(
            [cli, "select", str(root), "--out", str(out / "select")],
            env,
            "finetasks-afr select",
            out / "logs" / "select.log",
        )
        run_command(
            [args.make, "--no-print-directory", "select-tasks", f"SCORES={scores}", f"OUT={out / 'select-tasks'}"],
            env,
            "make select-tasks",
            out / "logs" / "select-tasks.log",
        )
        timings["finetasks_s"] = time.perf_counter() - t0

        expected, groups = read_lm_eval_json(root)
        if groups != len(checkpoints):
            raise CheckError(f"expected one group row ({GROUP}) per results file, skipped {groups}")
        summary["rows"] = compare(scores, expected)
        summary["group_rows_skipped"] = groups
        summary["sampled_rows"] = sum(1 for value in expected.values() if value[3] is not None)
        if summary["sampled_rows"] != len(expected):  # --limit 50 cuts every task's test split here
            raise CheckError(f"--limit {LIMIT} sampled {summary['sampled_rows']} of {len(expected)} rows, expected all")
        for report in (out / "select" / "report.md", out / "select-tasks" / "report.md"):
            if "sampled scores:" not in report.read_text(encoding="utf-8"):
                raise CheckError(f"{report}: the scores under --limit {LIMIT} are not flagged (no 'sampled scores:')")
        log(f"the collected table ({summary['rows']} rows) equals the lm-eval JSON files, exactly")
        summary["ok"] = True
    except CheckError as error:
        summary["error"] = str(error)
        log(f"FAILED: {error}")
    timings["total_s"] = time.perf_counter() - started
    summary["timings"] = {k: round(v, 1) for k, v in timings.items()}
    (out / "check.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    log(f"{'passed' if summary['ok'] else 'failed'} in {timings['total_s']:.0f} s ({out / 'check.json'})")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

"""Proof that finetasks_afr.prompts.fewshot keeps every document out of its own few-shot examples and draws them per
document.

Stock lighteval 0.13 compares the evaluated document with its candidates by `Doc` equality after renaming it
"name|k", so nothing is ever excluded, and it gives every document one shared list of examples. These tests build
tiny local tasks (tests/local_dataset.py, and the 6-item toy task of tests/toy_tasks.py) whose few-shot split is
the evaluation split, run them through lighteval's own `LightevalTask.get_docs` + `PromptManager.prepare_prompt`
(and, in the slow test, through the plain `lighteval accelerate` CLI with a tiny model, reading the prompts back
from the saved details), and check both sides: with `fewshot.restore()` the stock leak and the shared pool are
there (so lighteval still has the bug and these tests can fail), with `fewshot.apply()` they are gone.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_variable, "1")

import pytest  # noqa: E402

from finetasks_afr.prompts import fewshot  # noqa: E402
from tests.local_dataset import write_local_dataset  # noqa: E402
from tests.toy_tasks import ENV as TOY_ENV  # noqa: E402
from tests.toy_tasks import ITEMS as TOY_ITEMS  # noqa: E402
from tests.toy_tasks import write_toy_dataset  # noqa: E402

PROJECT = Path(__file__).resolve().parents[2]
STOCK_IS_0_13 = fewshot.version_is_affected(fewshot.lighteval_version())
stock_only = pytest.mark.skipif(not STOCK_IS_0_13, reason="asserts the behaviour of lighteval 0.13's own sampler")

LETTERS = [" A", " B", " C", " D"]


def _rows(prefix: str, count: int, n_choices: int, step: int) -> list[dict[str, Any]]:
    return [
        {
            "query": f"{prefix} {i:02d}: which letter?\nAnswer:",
            "choices": LETTERS[:n_choices],
            "gold": (i * step) % n_choices,
        }
        for i in range(count)
    ]


# Few-shot split "train" (4 labels, or 2 labels as Winogrande MCF), evaluation split "test".
ORDER_SPLITS = {"train": _rows("Train item", 40, 4, 3), "test": _rows("Test item", 30, 4, 1)}
PAIR_SPLITS = {"train": _rows("Train pair", 20, 2, 1), "test": _rows("Test pair", 30, 2, 1)}
# Cross-split duplicates: each test question also sits in the few-shot split ("validation"), differing in case and
# spacing (and, for the second, in its label), plus one row with the first's question but other options (kept).
DUP_TEST = [
    {"query": "Tweet: Mo fẹ́ràn ọjà yìí gan-an!\nSentiment:", "choices": [" positive", " negative"], "gold": 0},
    {"query": "Tweet: Ina son wannan.\nSentiment:", "choices": [" positive", " negative"], "gold": 0},
    {"query": "Tweet: Sijui kama ni kweli.\nSentiment:", "choices": [" positive", " negative"], "gold": 1},
]
DUP_VALIDATION = [
    {"query": "tweet:  mo fẹ́ràn ọjà yìí GAN-AN!\nSentiment: ", "choices": [" Positive", " negative"], "gold": 0},
    {"query": "Tweet: Ina son wannan.\n Sentiment:", "choices": [" positive", " negative"], "gold": 1},
    {"query": "Tweet: Sijui kama ni kweli.\nSentiment:", "choices": [" positive", " negative"], "gold": 1},
    {"query": "Tweet: Mo fẹ́ràn ọjà yìí gan-an!\nSentiment:", "choices": [" good", " bad", " so-so"], "gold": 0},
    *({"query": f"Tweet: other tweet {i}\nSentiment:", "choices": [" positive", " negative"], "gold": i % 2}
      for i in range(6)),
]  # fmt: skip


# ------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module", autouse=True)
def _leave_fewshot_as_found() -> Iterator[None]:
    """These tests apply and restore the sampler; other modules (importing finetasks_afr.tasks) expect it on."""
    was_applied = fewshot.applied()
    yield
    fewshot.restore()
    if was_applied:
        fewshot.apply()


@pytest.fixture
def fixed(monkeypatch: pytest.MonkeyPatch) -> None:
    if not STOCK_IS_0_13:
        pytest.skip("finetasks_afr.prompts.fewshot replaces the sampler of lighteval 0.13 only")
    monkeypatch.delenv(fewshot.ENV_SWITCH, raising=False)
    fewshot.restore()
    assert fewshot.apply() == {fewshot.FIX: "applied"}
    fewshot.reset_counters()


@pytest.fixture
def stock() -> None:
    fewshot.restore()


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fewshot_data")
    return {
        "toy": write_toy_dataset(root / "toy"),
        "order": write_local_dataset(root, "fewshot_order", ORDER_SPLITS),
        "pairs": write_local_dataset(root, "fewshot_pairs", PAIR_SPLITS),
        "dup": write_local_dataset(root, "fewshot_dup", {"validation": DUP_VALIDATION, "test": DUP_TEST}),
    }


# ------------------------------------------------------------------------------------------------ helpers


def prompt(line: dict[str, Any], task_name: str) -> Any:
    from lighteval.tasks.requests import Doc

    return Doc(task_name=task_name, query=line["query"], choices=list(line["choices"]), gold_index=line["gold"])


def local_docs(
    data_dir: Path,
    name: str,
    k: int,
    few_shots_split: str,
    splits: tuple[str, ...] = ("train", "test"),
    select: str | None = None,
    max_samples: int | None = None,
) -> list[Any]:
    """Documents of a task over a local dataset (evaluation split "test"), through LightevalTask.get_docs."""
    from lighteval.metrics.dynamic_metrics import LogLikelihoodAccMetric
    from lighteval.tasks.lighteval_task import LightevalTask, LightevalTaskConfig

    config = LightevalTaskConfig(
        name=name,
        prompt_function=prompt,
        hf_repo=str(data_dir),
        hf_subset="default",
        metrics=[LogLikelihoodAccMetric(normalization=None)],
        hf_avail_splits=list(splits),
        evaluation_splits=["test"],
        few_shots_split=few_shots_split,
        few_shots_select=select,
        num_fewshots=k,
    )
    return LightevalTask(config).get_docs(max_samples=max_samples)


def toy_docs(toy_dir: Path, k: int, select: str | None = None) -> list[Any]:
    """The toy task of tests/toy_tasks.py (6 items, only a test split: the few-shot split IS the evaluation split)."""
    from lighteval.tasks.lighteval_task import LightevalTask

    from tests import toy_tasks

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(TOY_ENV, str(toy_dir))
        config = toy_tasks._tasks()[0]
    config = dataclasses.replace(config, num_fewshots=k, few_shots_select=select)
    return LightevalTask(config).get_docs()


def prompts(docs: list[Any]) -> list[str]:
    from lighteval.tasks.prompt_manager import PromptManager

    manager = PromptManager()
    return [manager.prepare_prompt(doc) for doc in docs]


def shows_itself(prompt_text: str, query: str, gold: str) -> bool:
    """The prompt holds "query gold" as one of its examples (PromptManager joins parts with blank lines)."""
    parts = prompt_text.split("\n\n")
    assert parts[-1] == query, (parts[-1], query)
    return f"{query} {gold.strip()}" in parts[:-1]


def leaking(docs: list[Any]) -> int:
    return sum(shows_itself(text, doc.query, doc.get_golds()[0]) for doc, text in zip(docs, prompts(docs), strict=True))


def answers(doc: Any) -> tuple[str, ...]:
    return tuple(example.get_golds()[0].strip() for example in doc.fewshot_samples)


def rendered_prompts(data: dict[str, Path]) -> dict[str, list[str]]:
    """Prompts of three tasks with the sampler applied; also run in subprocesses with other PYTHONHASHSEEDs."""
    fewshot.apply()
    return {
        "order_balanced_5": prompts(local_docs(data["order"], "fs_order", 5, "train")),
        "order_random_3": prompts(local_docs(data["order"], "fs_order_random", 3, "train", select="random")),
        "toy_5": prompts(toy_docs(data["toy"], 5)),
    }


# ------------------------------------------------------------------------------------------------ probe, guards


@stock_only
def test_probe_reports_the_bug_on_stock_and_not_after_apply(stock: None) -> None:
    from lighteval.tasks.lighteval_task import LightevalTask
    from lighteval.tasks.prompt_manager import FewShotSampler

    original_sampler = FewShotSampler.sample_fewshot_examples
    original_get_docs = LightevalTask.get_docs
    report = fewshot.probe()
    assert report.documents == 6
    assert report.leaked == 2  # the 2 documents at the head of the shared k + 1 pool see themselves
    assert report.distinct_example_lists == 1 and report.shared_pool and report.needs_fix

    assert fewshot.apply() == {fewshot.FIX: "applied"}
    assert FewShotSampler.sample_fewshot_examples is not original_sampler
    after = fewshot.probe()
    assert after.leaked == 0 and not after.shared_pool and not after.needs_fix
    assert after.distinct_example_lists > 1

    fewshot.restore()
    assert FewShotSampler.sample_fewshot_examples is original_sampler
    assert LightevalTask.get_docs is original_get_docs
    assert fewshot.probe() == report
    assert not fewshot.applied()


def test_probe_counts_nothing_and_keeps_the_global_random_state(fixed: None) -> None:
    import random

    fewshot.restore()
    random.seed(1234)
    expected = random.random()
    random.seed(1234)
    fewshot.probe()  # stock: lighteval's balanced sampler calls random.seed(0)
    assert random.random() == expected
    fewshot.apply()
    fewshot.probe()
    assert not fewshot.EXCLUDED and not fewshot.SAMPLED


def test_apply_is_idempotent_and_guarded(monkeypatch: pytest.MonkeyPatch, fixed: None) -> None:
    from lighteval.tasks.prompt_manager import FewShotSampler

    installed = FewShotSampler.sample_fewshot_examples
    assert fewshot.apply() == {fewshot.FIX: "applied"}
    assert FewShotSampler.sample_fewshot_examples is installed

    fewshot.restore()
    original = FewShotSampler.sample_fewshot_examples
    monkeypatch.setenv(fewshot.ENV_SWITCH, "0")
    assert fewshot.apply() == {fewshot.FIX: f"disabled by {fewshot.ENV_SWITCH}"}
    assert FewShotSampler.sample_fewshot_examples is original and not fewshot.applied()

    monkeypatch.setenv(fewshot.ENV_SWITCH, "")
    monkeypatch.setattr(fewshot, "lighteval_version", lambda: "0.14.0")
    assert fewshot.apply()[fewshot.FIX].startswith("skipped: lighteval 0.14.0 is not a 0.13.x release")
    assert not fewshot.applied()
    if STOCK_IS_0_13:  # force skips the version guard; the probe still finds the stock bug
        monkeypatch.setenv(fewshot.ENV_SWITCH, "force")
        assert fewshot.apply() == {fewshot.FIX: "applied"}

    fewshot.restore()
    monkeypatch.setenv(fewshot.ENV_SWITCH, "force")
    monkeypatch.setattr(fewshot, "probe", lambda: fewshot.ProbeReport(documents=6, leaked=0, distinct_example_lists=6))
    assert fewshot.apply()[fewshot.FIX].startswith("skipped: lighteval's sampler already excludes")
    assert not fewshot.applied()


# ------------------------------------------------------------------------------------------ self-exclusion


@stock_only
def test_stock_shows_documents_themselves(data: dict[str, Path], stock: None) -> None:
    docs = toy_docs(data["toy"], 5)
    assert len(docs) == len(TOY_ITEMS) == 6
    assert leaking(docs) == 5  # the pool is all 6 documents; each takes its first 5, itself included for 5 of them
    assert len({tuple(example.query for example in doc.fewshot_samples) for doc in docs}) == 1


def test_fixed_never_shows_a_document_itself_and_gives_exactly_k(
    data: dict[str, Path], fixed: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="finetasks_afr.prompts.fewshot")
    docs = toy_docs(data["toy"], 5)
    assert leaking(docs) == 0
    queries = {doc.query for doc in docs}
    for doc in docs:
        assert len(doc.fewshot_samples) == 5
        assert {example.query for example in doc.fewshot_samples} == queries - {doc.query}  # exactly the other 5
    assert len({tuple(example.query for example in doc.fewshot_samples) for doc in docs}) > 1  # orders differ
    task = "toyfacts_eng_cf|5"
    assert fewshot.EXCLUDED[(task, fewshot.SELF)] == 6 and fewshot.EXCLUDED[(task, fewshot.DUPLICATE)] == 0
    assert fewshot.SAMPLED[task] == 6

    toy_docs(data["toy"], 5)  # a second build of the same task (a sweep's next checkpoint): counted, not logged
    lines = [record.getMessage() for record in caplog.records if task in record.getMessage()]
    assert lines == [
        f"finetasks_afr.prompts.fewshot {task}: 6 documents got per-document seeded examples; "
        "excluded 6 candidates that "
        "were the document itself and 0 near-copies (other rows with its text up to case, punctuation, symbols and "
        "spacing, answers aside)"
    ]
    assert fewshot.EXCLUDED[(task, fewshot.SELF)] == 12


def test_a_call_without_the_document_goes_to_lighteval(data: dict[str, Path], fixed: None) -> None:
    """Nothing to exclude and nothing to seed on: lighteval's own sampler answers (its shared pool)."""
    from lighteval.tasks.lighteval_task import LightevalTask

    from tests import toy_tasks

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(TOY_ENV, str(data["toy"]))
        config = dataclasses.replace(toy_tasks._tasks()[0], num_fewshots=3)
    fewshot.restore()
    stock_examples = LightevalTask(config).fewshot_sampler.sample_fewshot_examples(3, 0)
    fewshot.apply()
    task = LightevalTask(config)
    assert task.fewshot_sampler.sample_fewshot_examples(3, 0) == stock_examples
    assert len(stock_examples) == 3
    assert task.fewshot_sampler.sample_fewshot_examples(0, 0, formatted_doc=task.eval_docs()[0]) == []
    assert not fewshot.SAMPLED


def test_fewer_candidates_than_k_gives_all_the_others(data: dict[str, Path], fixed: None) -> None:
    for doc in toy_docs(data["toy"], 8):
        assert len(doc.fewshot_samples) == 5 and doc.query not in {example.query for example in doc.fewshot_samples}


@pytest.mark.parametrize(
    "select", ["balanced", "random", "sequential", "random_sampling", "random_sampling_from_train"]
)
def test_every_selection_mode_excludes_the_document(data: dict[str, Path], fixed: None, select: str) -> None:
    docs = toy_docs(data["toy"], 3, select=select)
    assert leaking(docs) == 0
    assert all(len(doc.fewshot_samples) == 3 for doc in docs)
    lists = {tuple(example.query for example in doc.fewshot_samples) for doc in docs}
    if select == "sequential":  # the first 3 of the split, skipping the document itself
        in_order = [query for query, _, _ in TOY_ITEMS]
        for doc in docs:
            assert [example.query for example in doc.fewshot_samples] == [q for q in in_order if q != doc.query][:3]
    else:
        assert len(lists) > 1


def test_cross_split_duplicates_are_excluded(data: dict[str, Path], fixed: None) -> None:
    docs = local_docs(data["dup"], "fs_dup", 5, "validation", splits=("validation", "test"))
    assert len(docs) == 3
    for doc in docs:
        assert len(doc.fewshot_samples) == 5
        assert all(fewshot.text_key(example) != fewshot.text_key(doc) for example in doc.fewshot_samples)
    # 3 duplicates (case, spacing, one with another label); the row sharing only the question is not one.
    assert fewshot.EXCLUDED[("fs_dup|5", fewshot.DUPLICATE)] == 3
    assert fewshot.EXCLUDED[("fs_dup|5", fewshot.SELF)] == 0


def test_text_key_normalises_typography_but_not_content() -> None:
    from lighteval.tasks.requests import Doc

    base = Doc(query="Q:  Ọjà  yìí\n", choices=[" Yes", " no"], gold_index=0)
    assert fewshot.text_key(base) == fewshot.text_key(Doc(query="q: ọjà yìí", choices=["yes ", "NO"], gold_index=1))
    instruction = "Answer briefly."
    with_instruction = Doc(
        query=f"{instruction}\nQ: ọjà yìí", choices=[" yes", " no"], gold_index=0, instruction=instruction
    )
    assert fewshot.text_key(with_instruction) == fewshot.text_key(base)
    assert fewshot.text_key(Doc(query="Q: ọjà yìí", choices=[" yes", " maybe"], gold_index=0)) != fewshot.text_key(base)
    assert fewshot.text_key(Doc(query="Q: ọjà yii", choices=[" yes", " no"], gold_index=0)) != fewshot.text_key(base)


def test_normalise_keeps_exactly_the_letters_marks_and_digits_after_nfkc_and_case_folding() -> None:
    """The lazily filled translate table against the definition, character by character: every code point (a
    surrogate aside) alone, and texts that mix scripts, emoji, variation selectors, enclosing marks and ligatures."""
    import random
    import unicodedata

    def defined(text: str) -> str:
        folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
        return "".join(c for c in folded if unicodedata.category(c)[0] in "LMN" and not fewshot._SELECTOR.match(c))

    every = [chr(code) for code in range(0x110000) if not 0xD800 <= code <= 0xDFFF]
    assert [fewshot.normalise(char) for char in every] == [defined(char) for char in every]
    rng = random.Random(7)
    pool = "Ọjà yìí ﬁ Ⅻ ½ ẞ ǅ \u0301\u20dd\ufe0f😂🏽 \u200d ١٢ ሰላም 你好 ΣΑΣ İı ß —“”!?\t\n"
    texts = ["".join(rng.choices(pool, k=rng.randrange(40))) for _ in range(2000)]
    assert [fewshot.normalise(text) for text in texts] == [defined(text) for text in texts]
    assert fewshot.normalise("Q:  Ọjà  yìí\n") == "qọjàyìí" and fewshot.normalise("ﬁ½") == "fi12"


# ------------------------------------------------------------------------------------------ per-document order


@stock_only
def test_stock_gives_every_document_the_same_answer_sequence(data: dict[str, Path], stock: None) -> None:
    docs = local_docs(data["order"], "fs_order", 5, "train")
    assert len({answers(doc) for doc in docs}) == 1


@pytest.mark.parametrize(("dataset", "k", "counts"), [("order", 4, [1, 1, 1, 1]), ("order", 5, [2, 1, 1, 1]),
                                                      ("pairs", 5, [3, 2])])  # fmt: skip
def test_answer_sequences_differ_between_documents_and_stay_balanced(
    data: dict[str, Path], fixed: None, dataset: str, k: int, counts: list[int]
) -> None:
    docs = local_docs(data[dataset], f"fs_{dataset}", k, "train")
    sequences = [answers(doc) for doc in docs]
    assert all(len(sequence) == k for sequence in sequences)
    assert all(sorted(Counter(sequence).values(), reverse=True) == counts for sequence in sequences)
    assert len(set(sequences)) >= len(docs) // 3, Counter(sequences).most_common(3)
    # No fixed position of the answer: over documents, the first example's answer takes every label.
    assert len({sequence[0] for sequence in sequences}) == len(counts)


def test_random_mode_draws_per_document(data: dict[str, Path], fixed: None) -> None:
    docs = local_docs(data["order"], "fs_order_random", 3, "train", select="random")
    assert all(len(doc.fewshot_samples) == 3 for doc in docs)
    assert len({tuple(example.query for example in doc.fewshot_samples) for doc in docs}) > len(docs) // 2


def test_a_documents_examples_do_not_depend_on_max_samples_or_k_suffix(data: dict[str, Path], fixed: None) -> None:
    full = prompts(local_docs(data["order"], "fs_order", 5, "train"))
    first = prompts(local_docs(data["order"], "fs_order", 5, "train", max_samples=4))
    assert set(first) <= set(full)

    from lighteval.tasks.requests import Doc

    doc = Doc(query="q", choices=[" a", " b"], gold_index=1, task_name="x|5", id="7")
    same = Doc(query="q", choices=[" a", " b"], gold_index=[1], task_name="x", id="3")
    assert fewshot.doc_seed(0, "x|5", doc) == fewshot.doc_seed(0, "x", same)
    assert fewshot.doc_seed(1, "x", doc) != fewshot.doc_seed(0, "x", doc)
    assert fewshot.doc_seed(0, "y", doc) != fewshot.doc_seed(0, "x", doc)
    assert fewshot.doc_seed(0, "x", dataclasses.replace(doc, gold_index=0)) != fewshot.doc_seed(0, "x", doc)


@pytest.mark.slow
def test_prompts_are_byte_identical_across_processes_and_hash_seeds(data: dict[str, Path], fixed: None) -> None:
    here = rendered_prompts(data)
    script = (
        "import json, sys; from pathlib import Path; sys.path[:0] = [sys.argv[1]]; "
        "from tests.prompts import test_fewshot as t; "
        "paths = {key: Path(value) for key, value in json.loads(sys.argv[2]).items()}; "
        "sys.stdout.write(json.dumps(t.rendered_prompts(paths), ensure_ascii=False))"
    )
    paths = json.dumps({key: str(value) for key, value in data.items()})
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(PROJECT), paths],
            env=os.environ | {"PYTHONHASHSEED": seed, fewshot.ENV_SWITCH: ""},
            cwd=PROJECT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for seed in ("0", "4242")
    ]
    outputs = []
    for run in runs:
        stdout, stderr = run.communicate(timeout=120)
        assert run.returncode == 0, stderr.decode()[-3000:]
        outputs.append(stdout)
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0].decode("utf-8")) == here


# ------------------------------------------------------------------------------------------------ the CLI


CLI_TASK = "toyfacts_eng_cf|5"
CLI_MODULE = '''"""The toy task; importing finetasks_afr.tasks applies the suite's lighteval fixes, as in a real run."""

import finetasks_afr.tasks  # noqa: F401
from tests.toy_tasks import TASKS_TABLE  # noqa: F401
'''


@pytest.mark.slow
def test_lighteval_cli_prompts_never_show_the_document_itself(data: dict[str, Path], tmp_path: Path) -> None:
    """`lighteval accelerate --save-details` with a tiny model; the prompt of each document is read back from the
    details (the context tokens the model saw, decoded), once with the fix switched off by its environment switch
    (stock lighteval: documents see themselves) and once as the suite runs it."""
    import pyarrow.parquet as pq
    from transformers import AutoTokenizer

    from finetasks_afr.demo.tiny import make_tiny_causal_lm
    from finetasks_afr.scoring.lighteval_runtime import ensure_tiny_benchmarks_file

    corpus = [f"{query} {choices[gold]}." for query, choices, gold in TOY_ITEMS] * 20
    model = make_tiny_causal_lm(tmp_path / "model", corpus, vocab_size=300, hidden_size=32, seed=0)
    ensure_tiny_benchmarks_file()
    module = tmp_path / "fewshot_cli_tasks.py"
    module.write_text(CLI_MODULE, encoding="utf-8")
    lighteval = shutil.which("lighteval", path=str(Path(sys.executable).parent)) or "lighteval"
    base_env = os.environ | {TOY_ENV: str(data["toy"]), "PYTHONPATH": str(PROJECT)}
    started = time.perf_counter()
    runs = {}
    for variant, switch in (("stock", "0"), ("fixed", "")):
        # One copy per run: lighteval caches predictions, keyed by task and doc id (not prompt), in the model dir.
        copy = shutil.copytree(model, tmp_path / f"model_{variant}")
        command = [
            lighteval, "accelerate", f"model_name={copy},device=cpu,batch_size=64,max_length=512", CLI_TASK,
            "--custom-tasks", str(module), "--output-dir", str(tmp_path / variant), "--save-details",
        ]  # fmt: skip
        env = base_env | {fewshot.ENV_SWITCH: switch}
        runs[variant] = subprocess.Popen(
            command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
    logs = {variant: run.communicate(timeout=600)[0] for variant, run in runs.items()}
    print(f"two CLI runs in parallel: {time.perf_counter() - started:.1f} s")
    for variant, run in runs.items():
        assert run.returncode == 0, logs[variant][-4000:]
    assert "fewshot_sampler" not in logs["stock"] and "few-shot sampler left as is" in logs["stock"]
    assert "finetasks_afr.prompts.fewshot applied" in logs["fixed"]
    assert f"finetasks_afr.prompts.fewshot {CLI_TASK}: 6 documents" in logs["fixed"]

    tokenizer = AutoTokenizer.from_pretrained(model)
    leaked = {}
    for variant in runs:
        (details,) = (tmp_path / variant / "details").rglob(f"details_{CLI_TASK}_*.parquet")
        rows = pq.read_table(details).to_pylist()
        assert len(rows) == len(TOY_ITEMS)
        leaked[variant] = 0
        for row in rows:
            doc = row["doc"]
            seen = str(tokenizer.decode(row["model_response"]["input_tokens"], skip_special_tokens=True))
            gold = doc["choices"][doc["gold_index"]]
            leaked[variant] += shows_itself(seen, doc["query"], gold)
            assert len(seen.split("\n\n")) == 6  # 5 examples + the question
            examples = [example["query"] for example in doc["fewshot_samples"]]
            assert (doc["query"] in examples) == shows_itself(seen, doc["query"], gold)
    print(f"documents shown themselves: {leaked}")
    if STOCK_IS_0_13:
        assert leaked["stock"] == 5
    assert leaked["fixed"] == 0

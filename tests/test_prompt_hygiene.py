"""Suite-wide prompt hygiene on real rows: every task with rows in ../shared/data, 0-shot and 5-shot, every
formulation and both prompt languages.

What a user must be able to trust about a prompt, checked on the prompts lighteval itself builds
(`LightevalTask.get_docs` + `PromptManager.prepare_prompt`, with finetasks_afr.tasks' fixes applied):
no document among its own few-shot examples (not itself, not a copy of its text from another split); no
invisible characters (zero-width, BOM, variation selectors), literal "\\n" sequences or un-normalised (non-NFC)
text; no prompt or partial-scoring context starting with whitespace; no doubled question word
("Question: Question:"); few-shot answers that do not follow one pattern for every document; and prompts that are
byte-identical across processes with different PYTHONHASHSEED.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PROJECT = Path(__file__).resolve().parent.parent
DOCS_PER_TASK = 6
FEWSHOT = 5
# zero-width space/joiners, word joiner, BOM, soft hyphen, Mongolian vowel separator, variation selectors:
# written out here independently of finetasks_afr.benchmarks.common.INVISIBLE
INVISIBLE = re.compile("[\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e\ufe00-\ufe0f\U000e0100-\U000e01ef]")
DOUBLED_WORD = re.compile(r"(?:^|\n)([^\s:]+):\s*\1:", flags=re.MULTILINE)

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]


@dataclasses.dataclass
class Rendered:
    """One evaluated document of one task, as lighteval renders it."""

    task: str
    query: str
    zero_shot: str
    five_shot: str
    example_queries: list[str]
    example_answers: list[str]
    contexts: list[str]  # partial-scoring contexts (Winogrande CF), else []


def _mirrored_tasks(mirror: Path) -> list[Any]:
    """The suite's tasks built with `mirror` configured (hf_location resolves at build time), minus perplexity.

    Importing finetasks_afr.tasks applies the lighteval fixes (few-shot sampling included) exactly as the CLI does;
    the configs are then rebuilt here rather than by reloading that module, so other tests keep the hub configs.
    """
    import finetasks_afr.tasks  # noqa: F401  (applies the fixes)
    from finetasks_afr.benchmarks import all_tasks
    from finetasks_afr.benchmarks.common import TASK_INFO

    os.environ["FINETASKS_AFR_DATA_DIR"] = str(mirror)
    return [
        config
        for config in all_tasks()
        if config.hf_repo.startswith(str(mirror)) and TASK_INFO[config.name].formulation != "PPL"
    ]


def _render(config: Any, docs_per_task: int = DOCS_PER_TASK) -> Iterator[Rendered]:
    from lighteval.tasks.lighteval_task import LightevalTask
    from lighteval.tasks.prompt_manager import PromptManager

    manager = PromptManager()
    task = LightevalTask(dataclasses.replace(config, num_fewshots=FEWSHOT))
    for doc in task.get_docs(max_samples=docs_per_task):
        zero = dataclasses.replace(doc, fewshot_samples=[])
        yield Rendered(
            task=config.name,
            query=doc.query,
            zero_shot=manager.prepare_prompt(zero),
            five_shot=manager.prepare_prompt(doc),
            example_queries=[example.query for example in doc.fewshot_samples],
            example_answers=[example.get_golds()[0] for example in doc.fewshot_samples],
            contexts=list((doc.specific or {}).get("partial_scoring_contexts") or []),
        )


@pytest.fixture(scope="module")
def rendered(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Rendered]]:
    """Every mirrored task (about 900) rendered on its first documents, 0- and 5-shot."""
    from hub_rows import write_hub_row_mirror

    from finetasks_afr.mirror import import_raw

    mirror = tmp_path_factory.mktemp("mirror")
    import_raw(shared_data, mirror)
    write_hub_row_mirror(mirror)  # hub-only datasets: rows written by hand in their published schema
    mp = pytest.MonkeyPatch()
    mp.setenv("FINETASKS_AFR_DATA_DIR", str(mirror))
    mp.setenv("HF_DATASETS_OFFLINE", "1")
    mp.setenv("HF_HUB_OFFLINE", "1")
    try:
        return {config.name: list(_render(config)) for config in _mirrored_tasks(mirror)}
    finally:
        mp.undo()


def test_every_family_and_variant_is_covered(rendered: dict[str, list[Rendered]]) -> None:
    from finetasks_afr.benchmarks.common import TASK_INFO

    variants = {(TASK_INFO[name].benchmark, TASK_INFO[name].formulation, TASK_INFO[name].prompt) for name in rendered}
    benchmarks = {benchmark for benchmark, _, _ in variants}
    assert {"sib200", "masakhanews", "afrisenti", "belebele", "winogrande_afr", "afriqa"} <= benchmarks
    assert {f"mmlu_afr_{s}" for s in ("clinical_knowledge", "college_medicine", "virology")} <= benchmarks
    for formulation in ("CF", "MCF", "HYBRID", "GEN"):
        for prompt in ("native", "en"):
            assert any(f == formulation and p == prompt for _, f, p in variants), (formulation, prompt)
    assert len(rendered) > 700  # 762 on ../shared/data
    assert all(docs for docs in rendered.values())


def test_no_document_among_its_own_examples(rendered: dict[str, list[Rendered]]) -> None:
    leaks = [
        (item.task, item.query[:60])
        for docs in rendered.values()
        for item in docs
        if _normalised(item.query) in {_normalised(query) for query in item.example_queries}
    ]
    assert not leaks


def test_no_invisible_characters_escaped_breaks_or_unnormalised_text(rendered: dict[str, list[Rendered]]) -> None:
    bad = []
    for docs in rendered.values():
        for item in docs:
            for text in (item.zero_shot, item.five_shot, *item.example_answers, *item.contexts):
                if INVISIBLE.search(text) or "\\n" in text or unicodedata.normalize("NFC", text) != text:
                    bad.append((item.task, text[:80]))
    assert not bad


def test_no_prompt_or_context_starts_with_whitespace(rendered: dict[str, list[Rendered]]) -> None:
    bad = [
        (item.task, text[:40])
        for docs in rendered.values()
        for item in docs
        for text in (item.zero_shot, item.five_shot, *item.contexts)
        if not text or text[0].isspace()
    ]
    assert not bad


def test_no_doubled_question_word(rendered: dict[str, list[Rendered]]) -> None:
    bad = [
        (item.task, match.group(0))
        for docs in rendered.values()
        for item in docs
        for match in [DOUBLED_WORD.search(item.five_shot)]
        if match
    ]
    assert not bad


def test_few_shot_answers_do_not_repeat_one_pattern(rendered: dict[str, list[Rendered]]) -> None:
    """With 5 examples per document, the answer sequences of a task's documents must not all be the same."""
    same = [
        name
        for name, docs in rendered.items()
        if len(docs) > 1 and len({tuple(item.example_answers) for item in docs}) == 1
    ]
    assert not same


def test_five_examples_per_document(rendered: dict[str, list[Rendered]]) -> None:
    short = [(item.task, len(item.example_queries)) for docs in rendered.values() for item in docs
             if len(item.example_queries) != FEWSHOT]  # fmt: skip
    assert not short


def _normalised(text: str) -> str:
    return " ".join(text.split())


# ------------------------------------------------------------------------------------ reproducibility

_DIGEST_SCRIPT = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("prompt_hygiene", {path!r})
module = importlib.util.module_from_spec(spec)
sys.modules["prompt_hygiene"] = module  # dataclasses look their module up there
spec.loader.exec_module(module)
print(json.dumps(module.digest_of_prompts({mirror!r})))
"""


def digest_of_prompts(mirror: str) -> dict[str, str]:
    """sha256 of the 0- and 5-shot prompts of one task per benchmark x formulation x prompt language."""
    from finetasks_afr.benchmarks.common import TASK_INFO

    chosen: dict[tuple[str, str, str], Any] = {}
    for config in _mirrored_tasks(Path(mirror)):
        info = TASK_INFO[config.name]
        chosen.setdefault((info.benchmark, info.formulation, info.prompt), config)
    digests = {}
    for config in chosen.values():
        digest = hashlib.sha256()
        for item in _render(config, docs_per_task=3):
            digest.update(item.zero_shot.encode() + b"\0" + item.five_shot.encode() + b"\0")
        digests[config.name] = digest.hexdigest()
    return digests


def test_prompts_are_byte_identical_across_hash_seeds(shared_data: Path, tmp_path: Path) -> None:
    from finetasks_afr.mirror import import_raw

    mirror = tmp_path / "mirror"
    import_raw(shared_data, mirror, datasets=["sib200", "winogrande_afr", "masakhanews", "afrisenti"],
               configs=["hau_Latn", "winogrande_zu", "hau", "amh"])  # fmt: skip
    script = _DIGEST_SCRIPT.format(path=str(Path(__file__).resolve()), mirror=str(mirror))
    runs = []
    for seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=PROJECT)
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert len(runs[0]) >= 10
    assert runs[0] == runs[1]

"""injongointent4 is consistent at every k: each few-shot example shows its own four options, and its answer is
among them; the instruction (printed once, above the examples) names no document-specific set (issue 26, item 1).

Rendered from the hand-written rows (the dataset is hub-only: tests/fixtures/hub_rows/injongointent.json) through
lighteval's LightevalTask and PromptManager, with the suite's fixes applied, at k = 0 and k = 5, for CF, MCF and
hybrid, in both prompt variants.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Any

import pytest

from finetasks_afr.benchmarks.injongointent import INTENTS, words

FORMS = ("cf", "mcf", "hybrid")
NAMES = [
    f"injongointent4_{lang}_{form}{suffix}" for lang in ("hau", "eng") for form in FORMS for suffix in ("", "_enprompt")
]
WORDS = {words(intent) for intent in INTENTS}
LETTER_LINE = re.compile(r"^([A-D])\. (.+)$")


@pytest.fixture(scope="module")
def prompts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[tuple[str, int], list[tuple[Any, str]]]]:
    """(task, k) -> [(doc, the prompt lighteval feeds the model)] for the injongointent4 tasks on the hand rows."""
    from lighteval.tasks.lighteval_task import LightevalTask
    from lighteval.tasks.prompt_manager import PromptManager

    from tests.hub_rows import write_hub_row_mirror

    mirror = tmp_path_factory.mktemp("mirror")
    write_hub_row_mirror(mirror, ["injongointent"])
    mp = pytest.MonkeyPatch()
    mp.setenv("FINETASKS_AFR_DATA_DIR", str(mirror))
    mp.setenv("HF_DATASETS_OFFLINE", "1")
    mp.setenv("HF_HUB_OFFLINE", "1")
    import finetasks_afr.tasks  # noqa: F401  (the suite's fixes: few-shot sampler, compat)
    from finetasks_afr.benchmarks import injongointent

    try:
        configs = {c.name: c for c in injongointent.tasks() if c.hf_repo.startswith(str(mirror))}
        manager = PromptManager()
        out: dict[tuple[str, int], list[tuple[Any, str]]] = {}
        for name in [n for n in NAMES if n in configs]:
            for k in (0, 5):
                docs = LightevalTask(dataclasses.replace(configs[name], num_fewshots=k)).get_docs()
                out[(name, k)] = [(doc, manager.prepare_prompt(doc)) for doc in docs]
        yield out
    finally:
        mp.undo()


def _shown_options(block: str) -> dict[str, str]:
    """Option label -> intent words, as one example (or the evaluated document) shows them: the lettered lines
    (MCF, hybrid) or the "Intents:" line (CF; label = the words themselves)."""
    shown: dict[str, str] = {}
    for line in block.split("\n"):
        if match := LETTER_LINE.match(line.strip()):
            shown[match.group(1)] = match.group(2).strip().lower()
        elif line.startswith("Intents: "):
            shown.update({option: option for option in line.removeprefix("Intents: ").lower().split(", ")})
    return shown


def _among(name: str, answer: str, shown: dict[str, str]) -> bool:
    """MCF scores the letter; CF and hybrid score the option words."""
    return answer in shown if "_mcf" in name else answer.lower() in shown.values()


def test_every_task_renders_at_both_k(prompts: dict[tuple[str, int], list[tuple[Any, str]]]) -> None:
    assert {name for name, _ in prompts} == {
        n for n in NAMES if not (n.startswith("injongointent4_eng") and "enprompt" in n)
    }
    assert all(len(rendered) >= 3 for rendered in prompts.values())
    assert all(len(doc.fewshot_samples) == k for (_, k), rendered in prompts.items() for doc, _ in rendered)


def test_the_instruction_names_no_document_specific_option_set(
    prompts: dict[tuple[str, int], list[tuple[Any, str]]],
) -> None:
    for (name, _), rendered in prompts.items():
        for doc, _ in rendered:
            named = {w for w in WORDS if re.search(rf"\b{re.escape(w)}\b", doc.instruction.lower())}
            assert not named, (name, doc.instruction)


def test_every_example_and_document_shows_four_options_holding_its_answer(
    prompts: dict[tuple[str, int], list[tuple[Any, str]]],
) -> None:
    examples = 0
    for (name, k), rendered in prompts.items():
        for doc, prompt in rendered:
            blocks = prompt.split("\n\n")
            assert blocks[0] == doc.instruction and len(blocks) == k + 2, name
            for example, block in zip(doc.fewshot_samples, blocks[1:-1], strict=True):
                shown = _shown_options(block)
                assert len(shown) == 4 and set(shown.values()) <= WORDS, (name, block)
                answer = example.get_golds()[0].strip()
                assert block.endswith(" " + answer), (name, block)
                # the example's answer is one of ITS options: a letter among its lettered lines (MCF), or words
                assert _among(name, answer, shown), (name, block)
                examples += 1
            own = _shown_options(blocks[-1])
            assert len(own) == 4, (name, blocks[-1])
            gold = doc.get_golds()[0].strip()
            assert _among(name, gold, own), (name, blocks[-1])
    assert examples >= 5 * 3 * 9  # 9 tasks x >= 3 documents x 5 examples


def test_cf_options_follow_the_text_and_are_the_choices_scored(
    prompts: dict[tuple[str, int], list[tuple[Any, str]]],
) -> None:
    """CF scores the option words: the choices are exactly the words on the document's "Intents:" line."""
    for (name, _), rendered in prompts.items():
        if "_cf" not in name:
            continue
        for doc, _ in rendered:
            lines = doc.query.split("\n")
            intents = [line for line in lines if line.startswith("Intents: ")]
            assert len(intents) == 1, doc.query
            assert [c.strip().lower() for c in doc.choices] == intents[0].removeprefix("Intents: ").lower().split(", ")

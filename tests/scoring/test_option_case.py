"""Options keep their case where it carries meaning (issue 26, item 5; compat fix 6).

Real rows: the raw Bridging-the-Gap MMLU test files (clinical_knowledge, college_medicine, virology; English and
11 African languages) go through the suite's own `mmlu_afr_*` prompt functions (CF and hybrid score the option
text; MCF shows it on lettered lines). Every option whose first word's case carries meaning (mRNA, pH,
acetyl-CoA, i-pH, "a = g sin ?") must come out with its first letter unchanged; the other options are still
capitalised as lighteval does, so the prompts change only where intended. Stock lighteval (compat restored)
still turns "mRNA, tRNA and ribosomes" into "MRNA, tRNA and ribosomes".
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import finetasks_afr.tasks as suite
from finetasks_afr.benchmarks.bridging import SUBJECTS, SUFFIX
from finetasks_afr.scoring import compat

ISO3 = {code: iso3 for iso3, code in SUFFIX.items()}
FILE = re.compile(rf"^(?P<subject>{'|'.join(SUBJECTS)})_test(?:_(?P<code>[a-z]+))?\.csv$")
LETTERS = "ABCD"
OPTION_LINE = re.compile(r"^[A-D][^\w\s] (.*)$")


def _rows(shared_data: Path) -> Iterator[tuple[str, str, list[str]]]:
    """(iso3, subject, [question, A, B, C, D, answer]) for every raw test row."""
    folder = shared_data / "bridging_the_gap" / "mmlu_cm_ck_vir"
    for path in sorted(folder.glob("*_test*.csv")):
        match = FILE.match(path.name)
        assert match, path.name
        iso3 = ISO3[match["code"]] if match["code"] else "eng"
        with path.open(encoding="utf-8", newline="") as handle:
            for row in csv.reader(handle):
                yield iso3, match["subject"], [cell.strip() for cell in row]


def _line(iso3: str, row: list[str]) -> dict:
    """The row in the schema the task reads: the hub's (translations) or cais/mmlu's (English)."""
    if iso3 == "eng":
        return {"question": row[0], "choices": row[1:5], "answer": LETTERS.index(row[5]), "subject": ""}
    return dict(zip(("Question", "OptionA", "OptionB", "OptionC", "OptionD", "Answer"), row[:6], strict=True))


@pytest.fixture(scope="module")
def configs() -> dict[str, object]:
    return {config.name: config for config in suite.TASKS_TABLE if config.name.startswith("mmlu_afr_")}


def _rendered_options(config: object, name: str, line: dict) -> list[str]:
    """The four options as the task's prompt shows them: the scored choices (CF) or the lettered lines (MCF)."""
    doc = config.prompt_function(line, name)  # type: ignore[attr-defined]
    assert doc is not None, (name, line)
    if name.endswith("_cf"):
        return [choice.strip() for choice in doc.choices]
    lines = [m[1] for x in doc.query.split("\n") if (m := OPTION_LINE.match(x.strip()))]  # "A. x", Amharic "A። x"
    assert len(lines) == 4, doc.query
    return lines


@pytest.mark.shared_data
def test_options_whose_case_carries_meaning_keep_it_on_the_real_rows(shared_data: Path, configs: dict) -> None:
    assert compat.FIX_OPTION_CASE in compat.applied()
    kept: Counter[str] = Counter()
    capitalised: Counter[str] = Counter()
    for iso3, subject, row in _rows(shared_data):
        for form in ("cf", "mcf"):
            name = f"mmlu_afr_{subject}_{iso3}_{form}"
            shown = _rendered_options(configs[name], name, _line(iso3, row))
            for raw, option in zip(row[1:5], shown, strict=True):
                if not raw or not raw[0].islower():
                    continue
                if compat.case_carries_meaning(raw):
                    assert option[0] == raw[0], (name, raw, option)  # "mRNA ..." stays "mRNA ..."
                    kept[iso3] += form == "cf"
                else:
                    assert option[0] == raw[0].upper(), (name, raw, option)  # "strength." -> "Strength."
                    capitalised[iso3] += form == "cf"
    # every language has such options (the issue counted 7-19 mixed-case first words per language)
    assert set(kept) == {"eng", *ISO3.values()}, kept
    assert all(count >= 7 for count in kept.values()), kept
    assert sum(capitalised.values()) > 1000  # plain lower-case words are capitalised as before


@pytest.mark.shared_data
def test_the_issue_examples(shared_data: Path, configs: dict) -> None:
    """'mRNA, tRNA and ribosomes.' and 'pH of the muscle falls below 6.0.' from the English test files."""
    seen = set()
    for iso3, subject, row in _rows(shared_data):
        if iso3 != "eng":
            continue
        for raw in row[1:5]:
            if raw.startswith(("mRNA, tRNA and ribosomes", "pH of the muscle")):
                name = f"mmlu_afr_{subject}_eng_cf"
                shown = _rendered_options(configs[name], name, _line(iso3, row))
                assert raw.rstrip(".") in [option.rstrip(".") for option in shown], shown
                seen.add(raw[:4])
    assert seen == {"mRNA", "pH o"}


def test_case_carries_meaning() -> None:
    meaningful = ["mRNA, tRNA and ribosomes.", "pH.", "acetyl-CoA.", "i-pH yesicubu", "kwe-DNA", "p = 4", "x", "a.",
                  "a = g (sin ? – cos ?)", "x² + 1", "DNA is copied"]  # fmt: skip
    plain = ["strength.", "a lack of oxygen.", "book flight", "i-cortisol.", "The man", "", "  ", "4 cells"]
    assert all(compat.case_carries_meaning(text) for text in meaningful)
    assert not any(compat.case_carries_meaning(text) for text in plain)


def test_stock_lighteval_capitalises_every_option() -> None:
    """Why fix 6 exists: with the fixes restored, lighteval's template upper-cases the m of mRNA."""
    from lighteval.tasks.templates.multichoice import MCQInput, get_mcq_prompt_function
    from lighteval.tasks.templates.utils.formulation import CFFormulation
    from lighteval.utils.language import Language

    row = {"question": "Translation requires", "choices": ["mRNA, tRNA and ribosomes", "pH"], "gold_idx": 0}

    def adapter(line: dict) -> MCQInput:
        return MCQInput(question=line["question"], choices=line["choices"], gold_idx=line["gold_idx"])

    prompt = get_mcq_prompt_function(Language.ENGLISH, adapter, formulation=CFFormulation())
    was = compat.applied()
    compat.restore()
    try:
        assert compat.option_case_bug_present()
        assert [c.strip() for c in prompt(row, "probe").choices] == ["MRNA, tRNA and ribosomes", "PH"]
    finally:
        if was:
            compat.apply()
    assert compat.FIX_OPTION_CASE in compat.applied()
    assert [c.strip() for c in prompt(row, "probe").choices] == ["mRNA, tRNA and ribosomes", "pH"]

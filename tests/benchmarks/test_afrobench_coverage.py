"""The coverage table of docs/tasks-and-data.md against AfroBench is the one `scripts/afrobench_coverage.py`
computes from AfroBench's task names and the suite, and every AfroBench task name decodes to a language (none
hides among the non-African)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

PROJECT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("afrobench_coverage", PROJECT / "scripts" / "afrobench_coverage.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["afrobench_coverage"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_readme_table_is_the_computed_one() -> None:
    script = _script()
    readme = (PROJECT / "docs" / "tasks-and-data.md").read_text(encoding="utf-8")
    section = readme.split(script.START)[1].split(script.END)[0].strip()
    assert section == script.table(), (
        "docs/tasks-and-data.md coverage table is stale: run `make coverage-table` and review the diff"
    )


def test_every_afrobench_dataset_has_languages_and_only_listed_codes_are_left_out() -> None:
    from analysis.scores.lm_eval import afrobench_task_info

    script = _script()
    languages = script.afrobench_languages()
    assert {dataset.folder for dataset in script.DATASETS} == set(languages)
    assert all(languages[folder] for folder in languages)
    names = [
        line.strip()
        for line in script.TASK_NAMES.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    decoded = {info.language for name in names if (info := afrobench_task_info(name)) is not None}
    from finetasks_afr.prompts.languages import LANGUAGES

    assert decoded - set(LANGUAGES) <= script.NOT_AFRICAN  # every other AfroBench language is in our registry
    assert len(set().union(*languages.values())) == 66  # AfroBench's 66 African languages

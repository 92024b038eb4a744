"""What result files do not say about a task: its benchmark, language, category, formulation and chance score
(`TaskInfo`), the builtin info of the Pythia evaluations' lm-evaluation-harness tasks, and the task-info CSV a user
passes for any other task.

A module of its own because the suite's task definitions (finetasks_afr.benchmarks), the collection of lighteval
results and both lm-evaluation-harness readers (v0 JSON, 0.4 folders) share this one record, and none of them
should import a reader to get it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from analysis.base.encoding import TextEncodingError, check_user_text_file
from analysis.base.input_file import input_problem
from analysis.base.names import control_character_problem
from analysis.scores.schema import NO_BASELINE_NOTE, ScoreTableError, fmt


@dataclass(frozen=True)
class TaskInfo:
    """What the result files do not say about a task: its family, language, category and chance score.

    The one task-metadata record of the project: the suite's `TASK_INFO` (finetasks_afr.benchmarks.common) fills
    the last three fields too (which prompt words, which dataset and config the task reads); the score table
    needs only the first five.
    """

    benchmark: str
    language: str
    category: str
    formulation: str
    random_baseline: float
    prompt: str = "native"  # "native" (in-language prompt words) or "en" (English words)
    dataset: str = ""  # key of finetasks_afr.data.sources.SOURCES ("" for tasks outside the suite)
    subset: str = ""  # the dataset config the task reads


MMLU_SUBJECTS: tuple[str, ...] = (
    "abstract_algebra", "anatomy", "astronomy", "business_ethics", "clinical_knowledge",
    "college_biology", "college_chemistry", "college_computer_science", "college_mathematics",
    "college_medicine", "college_physics", "computer_security", "conceptual_physics", "econometrics",
    "electrical_engineering", "elementary_mathematics", "formal_logic", "global_facts",
    "high_school_biology", "high_school_chemistry", "high_school_computer_science",
    "high_school_european_history", "high_school_geography", "high_school_government_and_politics",
    "high_school_macroeconomics", "high_school_mathematics", "high_school_microeconomics",
    "high_school_physics", "high_school_psychology", "high_school_statistics", "high_school_us_history",
    "high_school_world_history", "human_aging", "human_sexuality", "international_law", "jurisprudence",
    "logical_fallacies", "machine_learning", "management", "marketing", "medical_genetics",
    "miscellaneous", "moral_disputes", "moral_scenarios", "nutrition", "philosophy", "prehistory",
    "professional_accounting", "professional_law", "professional_medicine", "professional_psychology",
    "public_relations", "security_studies", "sociology", "us_foreign_policy", "virology",
    "world_religions",
)  # fmt: skip

LM_EVAL_TASK_INFO: dict[str, TaskInfo] = {
    **{f"hendrycksTest-{s}": TaskInfo("mmlu", "eng", "GK", "CF", 0.25) for s in MMLU_SUBJECTS},
    "arc_easy": TaskInfo("arc", "eng", "GK", "CF", 0.25),
    "arc_challenge": TaskInfo("arc", "eng", "GK", "CF", 0.25),
    "sciq": TaskInfo("sciq", "eng", "GK", "CF", 0.25),
    "logiqa": TaskInfo("logiqa", "eng", "RES", "CF", 0.25),
    "piqa": TaskInfo("piqa", "eng", "RES", "CF", 0.5),
    "winogrande": TaskInfo("winogrande", "eng", "RES", "CF", 0.5),
    "wsc": TaskInfo("wsc", "eng", "RES", "CF", 0.5),
    # acc is greedy last-word match; ppl (lower is better) gets the same, meaningless, 0.0 baseline.
    "lambada_openai": TaskInfo("lambada", "eng", "RC", "GEN", 0.0),
}
"""Task info for the lm-evaluation-harness tasks of the Pythia evaluations (English, v0 names)."""

BIAS_PROBE_PREFIXES: tuple[str, ...] = ("crows_pairs",)
"""Tasks measuring bias, not skill: skipped with a note unless the caller's task_info names them."""

_TASK_INFO_COLUMNS = ("task", "benchmark", "language", "category", "formulation", "random_baseline")


def read_task_info(path: Path) -> dict[str, TaskInfo]:
    """Task info from a CSV with columns task,benchmark,language,category,formulation,random_baseline.

    The path is checked before it is opened: a FIFO would block the read (`analysis.base.input_file`)."""
    problem = input_problem(path, what="task-info CSV")
    if problem is not None:
        raise ScoreTableError(problem)
    try:
        check_user_text_file(path)
        frame = pl.read_csv(path, infer_schema=False)
    except TextEncodingError as error:
        raise ScoreTableError(str(error)) from None
    except (OSError, pl.exceptions.PolarsError) as error:
        raise ScoreTableError(f"{path}: cannot read the task-info CSV ({error})") from error
    missing = [c for c in _TASK_INFO_COLUMNS if c not in frame.columns]
    if missing:
        raise ScoreTableError(
            f"{path}: task-info CSV lacks column(s) {', '.join(missing)}; "
            f"fix: give it the header {','.join(_TASK_INFO_COLUMNS)}"
        )
    frame = frame.with_columns(pl.col(*_TASK_INFO_COLUMNS[:5]).str.normalize("NFC"))  # as the table's names
    # An empty random_baseline (or NaN) is "no baseline" (NaN here, null in the table), which validation
    # accepts for lower-is-better metrics only.
    text = pl.col("random_baseline").str.strip_chars()
    empty = text.is_null() | (text == "")
    baseline = pl.when(empty).then(float("nan")).otherwise(text.cast(pl.Float64, strict=False))
    other = pl.any_horizontal(pl.all().exclude("random_baseline").is_null())
    bad = frame.filter(baseline.is_null() | baseline.is_infinite() | other)
    if bad.height:
        raise ScoreTableError(
            f"{path}: {bad.height} task-info row(s) have an empty cell or a random_baseline that is not "
            f"a finite number, e.g. tasks {', '.join(map(fmt, bad['task'].head(5)))}; fix: fill every cell "
            f"({NO_BASELINE_NOTE}: leave it empty for them)"
        )
    dupes = frame.filter(pl.col("task").is_duplicated())["task"].unique().sort()
    if dupes.len():
        raise ScoreTableError(f"{path}: task(s) listed twice: {', '.join(dupes.head(5))}; fix: one row per task")
    rows = frame.with_columns(baseline.alias("random_baseline")).rows(named=True)
    for row in rows:
        for column in _TASK_INFO_COLUMNS[:5]:
            problem = control_character_problem(row[column], column, f"{path} (task {row['task']!r})")
            if problem:
                raise ScoreTableError(problem)
    return {r["task"]: TaskInfo(*(r[c] for c in _TASK_INFO_COLUMNS[1:])) for r in rows}


def merged_task_info(task_info: Mapping[str, TaskInfo] | Path | None) -> dict[str, TaskInfo]:
    """The builtin Pythia task info, overridden and extended by the caller's."""
    if task_info is None:
        return dict(LM_EVAL_TASK_INFO)
    extra = read_task_info(Path(task_info)) if isinstance(task_info, str | Path) else task_info
    return {**LM_EVAL_TASK_INFO, **extra}

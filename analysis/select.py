"""Criteria -> decisions -> suites: which (task, metric) to keep per language, and why.

Each (task, fewshot, metric) row of the signal frame is checked against the thresholds of the config.
Per task, the metric (and few-shot setting) that passes with the best margin is chosen; per language and
suite (cf, mcf) the kept tasks are grouped by category, and a missing category is flagged with the best
failing candidate. Every decision carries its reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from analysis.base.io import atomic_write_text, safe_file_name, write_csv_atomic
from analysis.config import Config
from analysis.scores.metrics import metric_info
from analysis.signal import DEGENERATE_REASON, SEPARATION_COLUMNS

CATEGORY_TITLES = {
    "GK": "General Knowledge",
    "RC": "Reading Comprehension",
    "RES": "Reasoning",
    "NLU": "Natural Language Understanding",
    "GEN": "Generative",
}
# Which formulations each published suite list holds; generative and perplexity tasks go in both.
SUITE_FORMULATIONS = {"cf": ("CF", "GEN", "PPL"), "mcf": ("MCF", "HYBRID", "GEN", "PPL")}
DECISION_COLUMNS = (
    "task", "fewshot", "metric", "language", "category", "formulation", "benchmark", "random_baseline",
    "non_random_baseline", "sampled_documents",
    "monotonicity", "monotonicity_ci_low", "monotonicity_ci_high", "monotonicity_n_constant",
    "monotonicity_ai2",
    "snr", "snr_kind", "snr_ci_low", "snr_ci_high", "snr_seed", "avg_std", "snr_checkpoint",
    "non_random_distance", "non_random_sigmas", "three_sigma", "three_sigma_kind",
    "consistency", "consistency_ci_low", "consistency_ci_high", "consistency_n_pairs", "consistency_reason",
    "separation", "separation_ci_low", "separation_ci_high", "separation_p", "separation_reason", "degenerate",
    "decision_accuracy", "decision_step", "decision_reason",
    "monotonicity_min", "snr_min", "sigma_min",
    "monotonicity_pass", "snr_pass", "non_random_pass", "non_random_applicable", "separation_pass", "passes",
    "margin", "chosen",
    "kept", "reason",
)  # fmt: skip


@dataclass(frozen=True)
class CoverageFlag:
    """A (language, suite) with no kept task in a category, and the best failing candidate."""

    language: str
    suite: str
    category: str
    candidate: str | None
    candidate_reason: str

    def describe(self) -> str:
        if self.candidate is None:
            return f"{self.language} {self.suite}: no {self.category} task in the table"
        return (
            f"{self.language} {self.suite}: no {self.category} task kept; "
            f"best failing candidate {self.candidate} ({self.candidate_reason})"
        )


@dataclass
class Selection:
    """The outcome of `select`: one decision row per (task, fewshot, metric), suites and coverage flags."""

    decisions: pl.DataFrame
    suites: dict[tuple[str, str], str] = field(default_factory=dict)  # (suite, language) -> file text
    coverage: list[CoverageFlag] = field(default_factory=list)

    @property
    def kept(self) -> pl.DataFrame:
        return self.decisions.filter(pl.col("kept"))


def select(signal: pl.DataFrame, config: Config) -> Selection:
    """Apply the thresholds, choose a metric per task, build suites and coverage flags."""
    decisions = decide(signal, config)
    suites = {key: text for key, text in _suites(decisions, config).items() if text}
    return Selection(decisions=decisions, suites=suites, coverage=_coverage(decisions, config))


def decide(signal: pl.DataFrame, config: Config) -> pl.DataFrame:
    """The decision rows of `select` alone: one per (task, fewshot, metric), each task's choice made among its own
    rows only, so the decisions of a part of the signal holding whole tasks are that part of the whole's."""
    return _choose(_judge(signal, config), config)


# ----------------------------------------------------------------------------------------- criteria


def _judge(signal: pl.DataFrame, config: Config) -> pl.DataFrame:
    """Pass / fail / not measurable (null) per criterion, and a normalised margin per criterion."""
    mono_min, sigma = config.monotonicity.min, config.non_random.sigma
    exempt = pl.col("formulation").is_in(list(config.snr.exempt_formulations))
    # Non-randomness is not applicable without a random baseline (perplexities): its pass is null, and it
    # neither blocks nor sets the margin; the reason says so.
    if "non_random_applicable" not in signal.columns:
        signal = signal.with_columns(pl.col("random_baseline").is_not_null().alias("non_random_applicable"))
    # a signal frame from before the separation statistic (or made by hand): not measured
    signal = signal.with_columns(
        pl.lit(None, dtype=pl.String if c == "separation_reason" else pl.Float64).alias(c)
        for c in SEPARATION_COLUMNS
        if c not in signal.columns
    )
    not_applicable = {"non_random": ~pl.col("non_random_applicable")}
    snr_min = pl.when(pl.col("snr_kind") == "checkpoint").then(config.snr.checkpoint_min).otherwise(config.snr.min)
    judged = signal.with_columns(
        pl.lit(mono_min).alias("monotonicity_min"),
        snr_min.alias("snr_min"),
        pl.lit(sigma).alias("sigma_min"),
        (pl.col("monotonicity") >= mono_min).alias("monotonicity_pass"),
        pl.when(exempt).then(pl.lit(True)).otherwise(pl.col("snr") >= snr_min).alias("snr_pass"),
        pl.when(not_applicable["non_random"]).then(None).otherwise(pl.col("three_sigma")).alias("non_random_pass"),
        (pl.col("consistency") > 0).alias("consistency_pass"),
        (pl.col("separation_p") < config.separation.alpha).alias("separation_pass"),
        # normalised margins: 0 at the threshold, capped at 1 ("comfortably passing")
        ((pl.col("monotonicity") - mono_min) / (1 - mono_min)).clip(upper_bound=1).alias("m_monotonicity"),
        pl.when(exempt).then(None).otherwise((pl.col("snr") / snr_min - 1).clip(upper_bound=1)).alias("m_snr"),
        ((pl.col("non_random_sigmas") - sigma) / sigma).clip(upper_bound=1).alias("m_non_random"),
        pl.col("consistency").clip(upper_bound=1).alias("m_consistency"),
        (1 - pl.col("separation_p") / config.separation.alpha).clip(-1, 1).alias("m_separation"),
    )
    required = required_criteria(config, has_baseline=False, higher_is_better=False)
    skip = {c: not_applicable.get(c, pl.lit(False)) for c in required}
    if "separation" not in config.selection.require:  # required only of some tasks: see required_criteria
        lower = pl.col("metric").replace_strict(_lower_is_better(signal), default=False, return_dtype=pl.Boolean)
        skip["separation"] = ~(
            (~pl.col("non_random_applicable") & pl.lit(config.separation.required_without_baseline))
            | (lower & pl.lit(config.separation.required_lower_is_better))
        )
    degenerate = pl.col("degenerate").fill_null(False) if "degenerate" in signal.columns else pl.lit(False)
    passes = ~degenerate & pl.all_horizontal([skip[c] | pl.col(f"{c}_pass").fill_null(False) for c in required])
    # the weakest required criterion sets the margin; a not-measurable one counts as -1, a not-applicable one
    # as 1 (it does not limit)
    margin = pl.min_horizontal(
        [
            pl.when(skip[c])
            .then(1.0)
            .when(pl.col(f"{c}_pass").is_null())
            .then(-1.0)
            .otherwise(pl.col(f"m_{c}").fill_null(1.0))
            for c in required
        ]
    )
    return judged.with_columns(passes.alias("passes"), margin.fill_nan(-1.0).alias("margin"))


def required_criteria(config: Config, *, has_baseline: bool, higher_is_better: bool = True) -> list[str]:
    """The criteria a task must pass: `[selection] require`, and separation for a task without a random baseline
    (`[separation] required_without_baseline`) and for a lower-is-better one (`required_lower_is_better`).

    A perplexity's seed SNR is its level over its seed noise (about 90 for any bits-per-byte task), and its
    distance from the uniform byte model is many sigma for any trained model: monotonicity, SNR and
    non-randomness alone say nothing of whether it tells the runs apart."""
    required = list(config.selection.require)
    needs = (not has_baseline and config.separation.required_without_baseline) or (
        not higher_is_better and config.separation.required_lower_is_better
    )
    if needs and "separation" not in required:
        required.append("separation")
    return required


def _lower_is_better(signal: pl.DataFrame) -> dict[str, bool]:
    """metric -> whether lower is better, for the metrics of `signal`."""
    return {
        m: (info := metric_info(m)) is not None and not info.higher_is_better
        for m in signal.get_column("metric").unique().to_list()
    }


def _choose(judged: pl.DataFrame, config: Config) -> pl.DataFrame:
    """Per task: the passing (fewshot, metric) with the best margin, then consistency, then preference."""
    preference = {m: i for i, m in enumerate(config.selection.metric_preference)}
    ranked = judged.with_columns(
        pl.col("metric")
        .map_elements(lambda m: _preference_rank(m, preference), return_dtype=pl.Int64)
        .alias("preference"),
    ).sort(
        ["task", "passes", "margin", "consistency", "preference", "fewshot", "metric"],
        descending=[False, True, True, True, False, False, False],
        nulls_last=True,
    )
    ranked = ranked.with_columns((pl.int_range(pl.len()).over("task") == 0).alias("chosen"))
    ranked = ranked.with_columns((pl.col("chosen") & pl.col("passes")).alias("kept"))
    reasons = [_row_reason(row, config) for row in ranked.iter_rows(named=True)]
    out = ranked.with_columns(pl.Series("reason", reasons, dtype=pl.String))
    return out.select([c for c in DECISION_COLUMNS if c in out.columns]).sort(["language", "task", "fewshot", "metric"])


def _preference_rank(metric: str, preference: dict[str, int]) -> int:
    """Position in the preference list; `f1_yor` and `exact_match_yor_prefix` match `f1` / `exact_match`."""
    for name, rank in preference.items():
        if metric == name or metric.startswith(name + "_"):
            return rank
    return len(preference)


def _fmt(value: float | None, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}f}"


def criterion_texts(row: dict, config: Config) -> dict[str, tuple[bool | None, str]]:
    """Each criterion's verdict and a one-phrase explanation with the value and the threshold.

    The verdict is whether the criterion lets the task through: True for an exempt or not-applicable one
    (its text says so), None when it could not be measured.
    """
    snr_kind = row.get("snr_kind") or "seed"
    texts: dict[str, tuple[bool | None, str]] = {}
    mono = row["monotonicity"]
    texts["monotonicity"] = (
        row["monotonicity_pass"],
        f"monotonicity {_fmt(mono)} {'>=' if row['monotonicity_pass'] else '<'} {config.monotonicity.min}"
        if mono is not None
        else (row.get("monotonicity_reason") or "monotonicity not measurable"),
    )
    if row["formulation"] in config.snr.exempt_formulations:
        texts["snr"] = (True, f"snr exempt ({row['formulation']})")
    elif row["snr"] is None:
        texts["snr"] = (None, row.get("snr_reason") or "snr not measurable")
    else:
        op = ">=" if row["snr_pass"] else "<"
        texts["snr"] = (
            row["snr_pass"],
            f"snr {_fmt(row['snr'], 1)} {op} {_fmt(row['snr_min'], 1)} ({snr_kind})",
        )
    texts["non_random"] = _non_random_text(row, config)
    texts["consistency"] = _consistency_text(row)
    texts["separation"] = _separation_text(row, config)
    return texts


def _separation_text(row: dict, config: Config) -> tuple[bool | None, str]:
    p = row.get("separation_p")
    if p is None:
        return None, row.get("separation_reason") or "separation not measurable"
    passed = p < config.separation.alpha
    interval = f" [{_fmt(row.get('separation_ci_low'))}, {_fmt(row.get('separation_ci_high'))}]"
    return passed, (
        f"runs separated {_fmt(row.get('separation'))}{interval} seed sd, "
        f"p {p:.2g} {'<' if passed else '>='} {config.separation.alpha:g}"
    )


def _non_random_text(row: dict, config: Config) -> tuple[bool | None, str]:
    if row.get("non_random_applicable") is False:
        return True, "non-random not applicable (no random baseline)"
    sigmas, passed = row["non_random_sigmas"], row["non_random_pass"]
    if sigmas is None:
        return passed, row.get("non_random_reason") or "non-randomness not measurable"
    op, kind = (">" if passed else "<="), row.get("three_sigma_kind")
    baseline, uniform = row.get("non_random_baseline"), row.get("random_baseline")
    above = "random"
    if baseline is not None and uniform is not None and baseline > uniform:
        above = f"the majority answer's share {_fmt(baseline, 3)}"
    return passed, f"{_fmt(sigmas, 1)} sigma above {above} {op} {config.non_random.sigma:g} ({kind})"


def _consistency_text(row: dict) -> tuple[bool | None, str]:
    cons = row["consistency"]
    return (
        None if cons is None else cons > 0,
        f"consistency {_fmt(cons)}" if cons is not None else (row.get("consistency_reason") or "n/a"),
    )


def _row_reason(row: dict, config: Config) -> str:
    texts = criterion_texts(row, config)
    info = metric_info(row["metric"])
    required = required_criteria(
        config,
        has_baseline=row.get("non_random_applicable") is not False,
        higher_is_better=info is None or info.higher_is_better,
    )
    failing = [texts[c][1] for c in required if texts[c][0] is not True]
    if row["kept"]:
        shown = "; ".join(texts[c][1] for c in required)
        return f"kept: {shown}; margin {_fmt(row['margin'])}; {texts['consistency'][1]}"
    if row["passes"]:
        return "passes, but another metric or few-shot setting of this task has a better margin"
    prefix = "dropped" if row["chosen"] else "fails"
    if row.get("degenerate"):
        failing = [DEGENERATE_REASON, *failing]
    return f"{prefix}: " + "; ".join(failing)


# ------------------------------------------------------------------------------------------- suites


def suite_of(formulation: str) -> list[str]:
    """The suite lists ('cf', 'mcf') a task of this formulation belongs to."""
    return [suite for suite, forms in SUITE_FORMULATIONS.items() if formulation in forms]


def _suites(decisions: pl.DataFrame, config: Config) -> dict[tuple[str, str], str]:
    """lighteval task-list text per (suite, language), grouped under `# Title (CAT)` headers."""
    kept = decisions.filter(pl.col("kept"))
    out: dict[tuple[str, str], str] = {}
    for suite, formulations in SUITE_FORMULATIONS.items():
        in_suite = kept.filter(pl.col("formulation").is_in(list(formulations)))
        for language in sorted(decisions.get_column("language").unique().to_list()):
            rows = in_suite.filter(pl.col("language") == language)
            blocks = []
            for category in config.selection.categories:
                lines = [
                    f"lighteval|{task}|{fewshot}"
                    for task, fewshot in rows.filter(pl.col("category") == category)
                    .select("task", "fewshot")
                    .sort("task")
                    .iter_rows()
                ]
                if lines:
                    title = CATEGORY_TITLES.get(category, category)
                    blocks.append("\n".join([f"# {title} ({category})", *lines]))
            out[(suite, language)] = "\n\n".join(blocks) + "\n" if blocks else ""
    return out


def _coverage(decisions: pl.DataFrame, config: Config) -> list[CoverageFlag]:
    """Flag each (language, suite, category) without a kept task, naming the best failing candidate."""
    flags = []
    chosen = decisions.filter(pl.col("chosen"))
    for suite, formulations in SUITE_FORMULATIONS.items():
        in_suite = chosen.filter(pl.col("formulation").is_in(list(formulations)))
        languages = sorted(in_suite.get_column("language").unique().to_list())
        for language in languages:
            rows = in_suite.filter(pl.col("language") == language)
            for category in config.selection.categories:
                candidates = rows.filter(pl.col("category") == category)
                if candidates.filter(pl.col("kept")).height:
                    continue
                if candidates.height == 0:
                    flags.append(CoverageFlag(language, suite, category, None, "no candidate"))
                    continue
                best = candidates.sort(["margin", "task"], descending=[True, False], nulls_last=True).row(0, named=True)
                flags.append(
                    CoverageFlag(language, suite, category, f"{best['task']} ({best['metric']})", best["reason"])
                )
    return flags


# ----------------------------------------------------------------------------------- files on disk


def suite_path(out_dir: Path, suite: str, language: str) -> Path:
    """`out_dir/suites/<suite>/<language>.txt`, the language made a safe file name."""
    return Path(out_dir) / "suites" / suite / f"{safe_file_name(language)}.txt"


def write_selection(selection: Selection, out_dir: Path) -> list[Path]:
    """decisions.csv and suites/{cf,mcf}/<lang>.txt, each written atomically. Returns the paths."""
    written = [write_csv_atomic(selection.decisions, out_dir / "decisions.csv")]
    for (suite, language), text in sorted(selection.suites.items()):
        written.append(atomic_write_text(suite_path(out_dir, suite, language), text))
    return written


# ------------------------------------------------------------------------------- reading decisions

DECISIONS_REQUIRED = ("task", "fewshot", "metric", "kept")
_TRUE = frozenset({"true", "1"})
_FALSE = frozenset({"false", "0"})


class DecisionsError(ValueError):
    """A decisions.csv that cannot drive `aggregate --decisions`; the message names the file, what and the fix."""


def read_decisions(path: Path, tasks: set[str] | None = None) -> pl.DataFrame:
    """The decisions.csv `select` wrote, checked: every column as text but `fewshot` (Int64) and `kept` (bool).

    `kept` accepts true/True/TRUE/1 and false/False/0 (a spreadsheet round-trip capitalises booleans; reading
    `True` as false would silently drop every task) and rejects anything else, naming the row. With `tasks` (the
    score table's tasks), a kept task the table lacks is an error: the file belongs to another table. A file that
    keeps nothing is an error too, since there is nothing to rank.
    """
    path = Path(path)
    if not path.is_file():
        raise DecisionsError(f"decisions file {path} does not exist; run `finetasks-afr select` to write one")
    try:
        frame = pl.read_csv(path, infer_schema_length=0)
    except (pl.exceptions.PolarsError, UnicodeDecodeError) as error:
        raise DecisionsError(f"decisions file {path} is not a readable CSV ({error}); pass the decisions.csv "
                             "that `finetasks-afr select` wrote") from error  # fmt: skip
    missing = [c for c in DECISIONS_REQUIRED if c not in frame.columns]
    if missing:
        raise DecisionsError(
            f"decisions file {path} lacks column(s) {', '.join(missing)} (it has {', '.join(frame.columns)}); "
            "pass the decisions.csv that `finetasks-afr select` wrote"
        )
    frame = frame.with_columns(_parse_kept(frame, path), _parse_fewshot(frame, path))
    frame = frame.with_columns(pl.col("task", "metric").str.normalize("NFC"))  # the table's names are in NFC
    kept = frame.filter(pl.col("kept"))
    if kept.is_empty():
        raise DecisionsError(
            f"decisions file {path} keeps no task (no row has kept=true); nothing to rank. Set kept=true on the "
            "tasks to rank the runs on, or relax the criteria with a --config file and select again"
        )
    unknown = sorted(set(kept.get_column("task").to_list()) - tasks) if tasks is not None else []
    if unknown:
        shown = ", ".join(unknown[:10]) + (f", ... ({len(unknown)} in all)" if len(unknown) > 10 else "")
        raise DecisionsError(
            f"decisions file {path} keeps task(s) the score table lacks: {shown}; pass the decisions.csv that "
            "`finetasks-afr select` wrote for this score table"
        )
    return frame


def _parse_kept(frame: pl.DataFrame, path: Path) -> pl.Series:
    values = []
    for number, raw in enumerate(frame.get_column("kept").to_list(), start=2):  # line 1 is the header
        text = (raw or "").strip().lower()
        if text not in _TRUE | _FALSE:
            raise DecisionsError(f"decisions file {path}, line {number}: kept is {raw!r}; write true/false (or 1/0)")
        values.append(text in _TRUE)
    return pl.Series("kept", values, dtype=pl.Boolean)


def _parse_fewshot(frame: pl.DataFrame, path: Path) -> pl.Series:
    values = []
    for number, raw in enumerate(frame.get_column("fewshot").to_list(), start=2):
        try:
            values.append(int((raw or "").strip()))
        except ValueError:
            raise DecisionsError(
                f"decisions file {path}, line {number}: fewshot is {raw!r}; write a whole number of shots"
            ) from None
    return pl.Series("fewshot", values, dtype=pl.Int64)

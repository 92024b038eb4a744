"""What the study's design says the analysis must find, and the check of an analysis against it.

The mixes move two language groups' shares in opposite directions and leave Somali's alone, so a task that carries
signal must rank the mixes by its language's share (DESIGNED_ORDER), and a Somali task can rank them only by noise.
`study_truth` lays that designed order next to what the aggregated language scores and every task's final scores
show, and counts how many of the kept and of the dropped tasks order the mixes as designed: whether the FineTasks
selection keeps the tasks that recover the design is the study's question, and a negative answer is reported as
plainly as a positive one. `summarise_truth` turns the check into the report's markdown, numbers from the check only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

import polars as pl
from scipy.stats import kendalltau

from analysis.aggregate import task_scores
from analysis.orderings import paired_differences
from analysis.scores.metrics import metric_info
from finetasks_afr.demo.truth import TRUTH_SCHEMA
from finetasks_afr.study.design import CONTROL, DESIGNED_ORDER, LANGUAGES, MIXES

NO_DESIGN = "no designed order"
UNRESOLVED = "unresolved"
AGAINST = "against the design"
AS_DESIGNED = "as designed"
NOISE = "no designed order (noise)"
TIE = "tie"
CHECK_TITLES: dict[str, str] = {
    "language_ranking": "Language ranking: the aggregated language score's order of the mixes; resolved when every "
    "designed pair's seed-paired difference of language scores has a 95% interval excluding 0",
    "task_order": "Task order: each task's order of the mixes at the final checkpoint (mean over seeds); resolved "
    "when every designed pair's seed-paired difference (last 3 checkpoints) has a 95% interval excluding 0",
    "contrast": "Contrasts: each designed pair of mixes per language, over its kept tasks; as designed when at least "
    "one kept task resolves it the designed way and none the other way (seed-paired difference, last 3 checkpoints)",
    "summary": "Summary: how many kept and dropped tasks order the mixes as designed",
}
CONTRAST_EXPECTED = "resolved as designed by a kept task, against by none"
_LISTED = 8  # task names listed in a summary row's detail before "..."


@dataclass(frozen=True)
class Ordering:
    """Runs' scores ordered best first, and how that order compares with a designed one."""

    scores: dict[str, float]  # run -> score, best first (lower first for a lower-is-better metric)
    higher_is_better: bool
    tie: bool
    missing: tuple[str, ...]  # designed runs without a score
    tau: float | None  # Kendall tau-b between the observed and the designed order (None: not computable)

    def observed(self) -> str:
        """The order as text, `=` between tied runs, prefixed with `tie:` when any two are tied."""
        if not self.scores:
            return "no scores"
        runs = list(self.scores)
        text = f"{runs[0]} {self.scores[runs[0]]:.4f}"
        better = ">" if self.higher_is_better else "<"  # best first either way: `<` where lower is better
        for before, run in pairwise(runs):
            text += f" {'=' if self.scores[run] == self.scores[before] else better} {run} {self.scores[run]:.4f}"
        return f"{TIE}: {text}" if self.tie else text

    def matches(self, designed: Sequence[str]) -> bool:
        """Whether every designed run is scored, none tied, in the designed order."""
        return not self.tie and not self.missing and [run for run in self.scores if run in designed] == list(designed)


def ordering(
    scores: Mapping[str, float],
    designed: Sequence[str] | None,
    runs: Sequence[str],
    higher_is_better: bool = True,
) -> Ordering:
    """The order of `runs` by `scores` (runs outside `runs` ignored) and its Kendall tau against `designed`."""
    present = {run: float(scores[run]) for run in runs if run in scores and scores[run] is not None}
    sign = 1.0 if higher_is_better else -1.0
    ordered = dict(sorted(present.items(), key=lambda item: (-sign * item[1], item[0])))
    values = list(ordered.values())
    tie = len(set(values)) < len(values)
    missing = tuple(run for run in designed or () if run not in present)
    tau = designed_tau(present, designed, higher_is_better) if designed else None
    return Ordering(ordered, higher_is_better, tie, missing, tau)


def designed_tau(scores: Mapping[str, float], designed: Sequence[str], higher_is_better: bool = True) -> float | None:
    """Kendall tau-b (scipy) between the runs' scores and their designed positions, over the runs in both: 1 is the
    designed order, -1 its reverse; None when fewer than two runs are scored or the scores are all equal."""
    common = [run for run in designed if run in scores]
    if len(common) < 2:
        return None
    position = [float(len(designed) - designed.index(run)) for run in common]  # best designed run: largest
    sign = 1.0 if higher_is_better else -1.0
    result = kendalltau(position, [sign * float(scores[run]) for run in common])
    tau = float(result.statistic)
    return None if math.isnan(tau) else tau


def language_ranking_rows(
    language_scores: pl.DataFrame,
    languages: Sequence[str],
    designed: Mapping[str, Sequence[str]],
    runs: Sequence[str],
    language_pairs: pl.DataFrame | None = None,
) -> list[dict]:
    """One row per language: the aggregated language score's order of the mixes against the designed order,
    resolved or not by the seed-paired differences of the language scores (`language_pairs`, from
    `analysis.aggregate`; without them every order counts as resolved, as before they existed)."""
    pairs: dict[str, dict[tuple[str, str], dict]] = {}
    for pair in (language_pairs if language_pairs is not None else pl.DataFrame()).iter_rows(named=True):
        pairs.setdefault(pair["language"], {})[(pair["run_a"], pair["run_b"])] = pair
    rows = []
    for language in languages:
        order = designed.get(language)
        frame = language_scores.filter(pl.col("language") == language)
        scores = dict(zip(frame.get_column("run").to_list(), frame.get_column("score").to_list(), strict=True))
        observed = ordering(scores, order, runs)
        expected = " > ".join(order) if order else (NOISE if language == CONTROL else NO_DESIGN)
        if not observed.scores:
            ok = None if order is None else False
            rows.append(_row("language_ranking", language, "language score", expected, "no language score", ok,
                             "no kept task of this language entered the aggregation"))  # fmt: skip
            continue
        ok = None if order is None else observed.matches(order)
        text, detail = observed.observed(), _order_detail(observed)
        if order is not None and language_pairs is not None:
            outcome, pair_text = resolution(pairs.get(language, {}), order, higher_is_better=True)
            ok = {AS_DESIGNED: True, AGAINST: False}.get(outcome)
            text = f"{UNRESOLVED}: {text}" if outcome == UNRESOLVED else text
            detail += f"; {pair_text}"
        rows.append(_row("language_ranking", language, "language score", expected, text, ok, detail))
    return rows


def final_task_scores(table: pl.DataFrame, chosen: pl.DataFrame) -> dict[str, dict[str, float]]:
    """task -> run -> the mean over seeds at the run's final step, on the task's chosen (fewshot, metric); the same
    scores the aggregation ranks (`analysis.aggregate.task_scores`)."""
    if chosen.is_empty():
        return {}
    scored = task_scores(table, chosen.select("task", "fewshot", "metric")).scores
    out: dict[str, dict[str, float]] = {}
    for task, run, score in scored.select("task", "run", "score").iter_rows():
        out.setdefault(task, {})[run] = score
    return out


def task_order_rows(
    table: pl.DataFrame,
    decisions: pl.DataFrame,
    designed: Mapping[str, Sequence[str]],
    runs: Sequence[str],
) -> tuple[list[dict], dict[str, Ordering], dict[str, str], dict[str, list[PairVerdict]]]:
    """One row per task of `decisions` (on its chosen metric): its final scores' order of the mixes against its
    language's designed order, resolved or not by the seeds (`resolution`); each task's Ordering and, for a
    language with a designed order, its outcome (AS_DESIGNED, AGAINST, UNRESOLVED) and its pairs' verdicts, for the
    summary and the contrasts."""
    chosen = decisions.filter(pl.col("chosen")).sort(_language_position(), "task")
    scores = final_task_scores(table, chosen)
    pairs = _pairs_by_task(table, chosen)
    rows, orderings, outcomes, verdicts = [], {}, {}, {}
    for row in chosen.iter_rows(named=True):
        task, language, metric = row["task"], row["language"], row["metric"]
        order = designed.get(language)
        info = metric_info(metric)
        higher = info is None or info.higher_is_better
        observed = ordering(scores.get(task, {}), order, runs, higher)
        orderings[task] = observed
        expected = " > ".join(order) if order else (NOISE if language == CONTROL else NO_DESIGN)
        direction = "" if info is not None and higher else (" (lower is better)" if info else " (direction unknown)")
        detail = f"{metric}{direction}, {row['fewshot']}-shot; {_order_detail(observed)}"
        text, ok = observed.observed(), None
        if order is not None:
            outcome, pair_text = resolution(pairs.get(task, {}), order, higher)
            outcomes[task] = outcome
            verdicts[task] = pair_verdicts(pairs.get(task, {}), order, higher)
            ok = {AS_DESIGNED: True, AGAINST: False}.get(outcome)
            text = f"{UNRESOLVED}: {text}" if outcome == UNRESOLVED else text
            detail += f"; {pair_text}"
        rows.append(_row("task_order", task, language, expected, text, ok, f"{detail}; {row['reason']}"))
    return rows, orderings, outcomes, verdicts


def _pairs_by_task(table: pl.DataFrame, chosen: pl.DataFrame) -> dict[str, dict[tuple[str, str], dict]]:
    """task -> (run_a, run_b) -> its seed-paired difference row (`analysis.orderings.paired_differences`)."""
    if chosen.is_empty():
        return {}
    out: dict[str, dict[tuple[str, str], dict]] = {}
    for pair in paired_differences(table, chosen.select("task", "fewshot", "metric")).iter_rows(named=True):
        out.setdefault(pair["task"], {})[(pair["run_a"], pair["run_b"])] = pair
    return out


@dataclass(frozen=True)
class PairVerdict:
    """One designed pair of runs (`better` designed above `worse`) as the seeds resolve it for one task or language:
    AS_DESIGNED, AGAINST or UNRESOLVED, and its difference with the interval as text."""

    better: str
    worse: str
    verdict: str
    text: str


def pair_verdicts(
    pairs: Mapping[tuple[str, str], dict], designed: Sequence[str], higher_is_better: bool
) -> list[PairVerdict]:
    """Every designed pair (the better-designed run first) with its seed-paired difference (better minus worse, raw
    score) from `pairs` (`analysis.orderings` rows): resolved the designed way, the other way, or not at all."""
    sign = 1.0 if higher_is_better else -1.0
    verdicts = []
    for i, better in enumerate(designed):
        for worse in designed[i + 1 :]:
            pair = pairs.get((better, worse)) or pairs.get((worse, better))
            if pair is None:
                verdicts.append(PairVerdict(better, worse, UNRESOLVED, f"{better} - {worse}: no common seeds"))
                continue
            flip = 1.0 if pair["run_a"] == better else -1.0
            difference = flip * pair["difference"]
            interval = (
                ""
                if pair["ci_low"] is None
                else (
                    f" [{min(flip * pair['ci_low'], flip * pair['ci_high']):+.4f}, "
                    f"{max(flip * pair['ci_low'], flip * pair['ci_high']):+.4f}]"
                )
            )
            verdict = UNRESOLVED if not pair["resolved"] else (AS_DESIGNED if sign * difference > 0 else AGAINST)
            verdicts.append(
                PairVerdict(better, worse, verdict, f"{better} - {worse} {difference:+.4f}{interval} {verdict}")
            )
    return verdicts


def resolution(
    pairs: Mapping[tuple[str, str], dict], designed: Sequence[str], higher_is_better: bool
) -> tuple[str, str]:
    """Whether the seeds resolve a task's designed order: AGAINST when some designed pair is resolved the other way,
    AS_DESIGNED when every one is resolved the designed way, else UNRESOLVED; and each pair's difference as text
    (`pair_verdicts`)."""
    found = pair_verdicts(pairs, designed, higher_is_better)
    verdicts = [pair.verdict for pair in found]
    outcome = AGAINST if AGAINST in verdicts else (AS_DESIGNED if set(verdicts) == {AS_DESIGNED} else UNRESOLVED)
    return outcome, "; ".join(pair.text for pair in found)


def contrast_rows(
    decisions: pl.DataFrame,
    verdicts_by_task: Mapping[str, Sequence[PairVerdict]],
    languages: Sequence[str],
    designed: Mapping[str, Sequence[str]],
) -> list[dict]:
    """Per language with a designed order and per designed pair of mixes: how many of the language's kept tasks the
    seeds resolve the designed way, the other way, or not at all. A contrast is recovered when at least one kept
    task resolves it as designed and none against: the study's question asked of each pair, not of whole orders,
    which a single unresolved pair leaves unresolved."""
    kept = decisions.filter(pl.col("chosen") & pl.col("kept"))
    rows: list[dict] = []
    for language in languages:
        order = designed.get(language)
        if order is None:
            continue
        tasks = sorted(kept.filter(pl.col("language") == language).get_column("task").to_list())
        for i, better in enumerate(order):
            for worse in order[i + 1 :]:
                found = [
                    (task, pair.verdict)
                    for task in tasks
                    for pair in verdicts_by_task.get(task, ())
                    if (pair.better, pair.worse) == (better, worse)
                ]
                by_verdict = {
                    v: [task for task, verdict in found if verdict == v] for v in (AS_DESIGNED, AGAINST, UNRESOLVED)
                }
                observed = (f"{len(by_verdict[AS_DESIGNED])} as designed, {len(by_verdict[AGAINST])} against, "
                            f"{len(by_verdict[UNRESOLVED])} unresolved (of {len(found)} kept)")  # fmt: skip
                ok = bool(by_verdict[AS_DESIGNED]) and not by_verdict[AGAINST]
                detail = "; ".join(f"{label}: {_listing(by_verdict[v])}" for v, label in
                                   ((AS_DESIGNED, "as designed"), (AGAINST, "against the design"),
                                    (UNRESOLVED, "unresolved")))  # fmt: skip
                rows.append(_row("contrast", language, f"{better} vs {worse}", CONTRAST_EXPECTED, observed, ok,
                                 detail if found else "no kept task of this language"))  # fmt: skip
    return rows


def summary_rows(
    decisions: pl.DataFrame,
    orderings: Mapping[str, Ordering],
    outcomes: Mapping[str, str],
    languages: Sequence[str],
    designed: Mapping[str, Sequence[str]],
) -> list[dict]:
    """Per language: of the kept tasks, how many order the mixes as designed, and of the dropped ones; for a
    language without a designed order, how many of its tasks were kept although their order can only be noise."""
    chosen = decisions.filter(pl.col("chosen"))
    rows: list[dict] = []
    pooled: dict[bool, list[tuple[str, str, float | None]]] = {True: [], False: []}
    for language in languages:
        tasks = chosen.filter(pl.col("language") == language).sort("task")
        kept = [task for task, k in tasks.select("task", "kept").iter_rows() if k]
        dropped = [task for task, k in tasks.select("task", "kept").iter_rows() if not k]
        order = designed.get(language)
        if order is None:
            observed = f"{len(kept)} of {len(kept) + len(dropped)} kept"
            detail = f"kept: {_listing(kept)}" if kept else "none kept"
            rows.append(_row("summary", language, "kept tasks", "its tasks order the mixes only by noise", observed,
                             None, detail))  # fmt: skip
            continue
        for is_kept, group in ((True, kept), (False, dropped)):
            verdicts = [(task, outcomes[task], orderings[task].tau) for task in group]
            pooled[is_kept] += verdicts
            rows.append(_summary_row(language, is_kept, verdicts))
    if any(language in designed for language in languages):
        rows += [_summary_row("all designed languages", is_kept, pooled[is_kept]) for is_kept in (True, False)]
    return rows


def _summary_row(subject: str, kept: bool, verdicts: list[tuple[str, str, float | None]]) -> dict:
    """A summary row: of a group (kept or dropped tasks), how many the seeds resolve as designed, against the
    design, or not at all, their mean tau and the tasks not resolved as designed. Only the kept group has a
    designed answer (no resolved order against the design); a dropped task may go either way."""
    counts = {outcome: sum(v == outcome for _, v, _ in verdicts) for outcome in (AS_DESIGNED, AGAINST, UNRESOLVED)}
    taus = [tau for _, _, tau in verdicts if tau is not None]
    mean_tau = f"mean Kendall tau {sum(taus) / len(taus):.2f}" if taus else "no Kendall tau"
    against = [task for task, v, _ in verdicts if v == AGAINST]
    unresolved = [task for task, v, _ in verdicts if v == UNRESOLVED]
    detail = mean_tau + (f"; against the design: {_listing(against)}" if against else "")
    detail += f"; unresolved: {_listing(unresolved)}" if unresolved else ""
    ok = (counts[AGAINST] == 0 if verdicts else None) if kept else None
    expected = "no resolved order against the design" if kept else "no designed answer (dropped)"
    observed = (f"{counts[AS_DESIGNED]} as designed, {counts[AGAINST]} against, {counts[UNRESOLVED]} unresolved "
                f"(of {len(verdicts)})")  # fmt: skip
    return _row("summary", subject, "kept tasks" if kept else "dropped tasks", expected, observed, ok, detail)


def study_truth(
    table: pl.DataFrame,
    decisions: pl.DataFrame,
    language_scores: pl.DataFrame,
    designed: Mapping[str, Sequence[str]] = DESIGNED_ORDER,
    runs: Sequence[str] = tuple(MIXES),
    language_pairs: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Every designed expectation of the study next to what the analysis found, one row per check (TRUTH_SCHEMA):
    `language_ranking` per language, `task_order` per task of `decisions`, `contrast` per language and designed
    pair, `summary` per language; `ok` is null where the design has no answer (the control, dropped tasks)."""
    present = set(decisions.get_column("language").to_list()) | set(language_scores.get_column("language").to_list())
    languages = [*LANGUAGES, *sorted(present - set(LANGUAGES))]
    task_rows, orderings, outcomes, verdicts = task_order_rows(table, decisions, designed, runs)
    rows = language_ranking_rows(language_scores, languages, designed, runs, language_pairs)
    rows += task_rows + contrast_rows(decisions, verdicts, languages, designed)
    rows += summary_rows(decisions, orderings, outcomes, languages, designed)
    return pl.DataFrame(rows, schema=TRUTH_SCHEMA)


def summarise_truth(check: pl.DataFrame) -> str:
    """The check as markdown for the README and the report: one table per check kind, with the count of rows as
    designed among those that have a designed answer."""
    parts: list[str] = []
    for name in [*CHECK_TITLES, *sorted(set(check.get_column("check").to_list()) - set(CHECK_TITLES))]:
        group = check.filter(pl.col("check") == name)
        if group.is_empty():
            continue
        judged = group.filter(pl.col("ok").is_not_null())
        agree = judged.filter(pl.col("ok")).height
        unresolved = group.filter(pl.col("observed").str.starts_with(f"{UNRESOLVED}:")).height
        parts.append(f"### {CHECK_TITLES.get(name, name)}\n")
        count = f"{agree} of {judged.height} with a designed answer as designed"
        parts.append(count + (f"; {unresolved} unresolved by the seeds.\n" if unresolved else ".\n"))
        header = ["subject", "kind", "expected", "observed", "as designed", "detail"]
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for row in group.iter_rows(named=True):
            verdict = UNRESOLVED if row["observed"].startswith(f"{UNRESOLVED}:") else _yes_no(row["ok"])
            cells = [row["subject"], row["kind"], row["expected"], row["observed"], verdict, row["detail"]]
            lines.append("| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |")
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


def _language_position() -> pl.Expr:
    """Sort key: the study's languages in design order, any other language after them."""
    return pl.col("language").replace_strict(list(LANGUAGES), list(range(len(LANGUAGES))), default=len(LANGUAGES),
                                             return_dtype=pl.Int64)  # fmt: skip


def _yes_no(ok: bool | None) -> str:
    return "n/a" if ok is None else ("yes" if ok else "no")


def _order_detail(observed: Ordering) -> str:
    """Kendall tau and the runs the designed order names but the scores lack."""
    text = "Kendall tau n/a" if observed.tau is None else f"Kendall tau {observed.tau:.2f}"
    return text + (f"; missing: {', '.join(observed.missing)}" if observed.missing else "")


def _listing(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_LISTED])
    return shown + (f", ... ({len(items)} in all)" if len(items) > _LISTED else "") if items else "none"


def _row(check: str, subject: str, kind: str, expected: str, observed: str, ok: bool | None, detail: str) -> dict:
    return {"check": check, "subject": subject, "kind": kind, "expected": expected, "observed": observed, "ok": ok,
            "detail": detail}  # fmt: skip


__all__ = ["CHECK_TITLES", "Ordering", "PairVerdict", "designed_tau", "ordering", "pair_verdicts", "study_truth",
           "summarise_truth"]  # fmt: skip

"""`finetasks-afr tasks`: list, search and show the suite's tasks from its index, without building the suite.

Every answer comes from `finetasks_afr/data/task_index.json` (`finetasks_afr.data.task_index`), so a listing or a
typo check takes a JSON read, not the suite's 17-60 s lighteval import; a test keeps the index equal to the suite.
"""

from __future__ import annotations

import difflib
from typing import Annotated

import typer

from finetasks_afr.cli.common import fail
from finetasks_afr.data.task_index import TaskEntry, TaskIndex, reachability, read_index

tasks_app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)

PROMPT_LABEL = {"native": "in-language", "en": "English"}
CLOSE_MATCHES = 5


def _close(word: str, candidates: list[str]) -> list[str]:
    """Close spellings of `word` among `candidates` (difflib's ratio), best first."""
    return difflib.get_close_matches(word.lower(), candidates, n=CLOSE_MATCHES, cutoff=0.6)


def _check_choice(option: str, value: str | None, known: set[str]) -> str | None:
    """`value` in lower case when it is one of `known` (compared in lower case); the named error with close
    spellings otherwise, so a filter that can match nothing says so instead of printing an empty list."""
    if value is None:
        return None
    lowered = {item.lower(): item for item in known}
    if value.lower() in lowered:
        return value.lower()
    close = _close(value, sorted(lowered))
    hint = f"; did you mean {', '.join(lowered[item] for item in close)}?" if close else ""
    raise fail(f"{option} {value!r} matches no task{hint} (known: {', '.join(sorted(known))})")


def _line(task: TaskEntry, widths: tuple[int, int, int]) -> str:
    name, benchmark, language = widths
    return (
        f"{task.name:<{name}}  {task.benchmark:<{benchmark}}  {task.language:<{language}}  "
        f"{task.formulation:<6}  {PROMPT_LABEL.get(task.prompt, task.prompt) if task.words else 'none'}"
    )


def _print_lines(tasks: list[TaskEntry]) -> None:
    """One line per task (name, benchmark, language, formulation, prompt language), aligned, on stdout."""
    widths = (
        max([len("task"), *(len(task.name) for task in tasks)]),
        max([len("benchmark"), *(len(task.benchmark) for task in tasks)]),
        max([len("language"), *(len(task.language) for task in tasks)]),
    )
    typer.echo(_line(TaskEntry("task", "benchmark", "language", "", "format", "prompt", 0.0, "", "", (), (), None,
                               (), None, "-", "", None), widths))  # fmt: skip
    for task in tasks:
        typer.echo(_line(task, widths))


@tasks_app.command("list")
def list_command(
    benchmark: Annotated[str | None, typer.Option("--benchmark", "-b", help="Only this benchmark (afrixnli).")] = None,
    language: Annotated[
        str | None, typer.Option("--language", "-l", help="Only this language (ISO 639-3: hau).")
    ] = None,
    formulation: Annotated[
        str | None, typer.Option("--formulation", "-f", help="Only this formulation: CF, MCF, HYBRID, PPL or GEN.")
    ] = None,
) -> None:
    """List the suite's tasks, one a line: name, benchmark, language, formulation, prompt language."""
    index = read_index()
    wanted_benchmark = _check_choice("--benchmark", benchmark, {task.benchmark for task in index.tasks})
    wanted_language = _check_choice("--language", language, {task.language for task in index.tasks})
    wanted_formulation = _check_choice("--formulation", formulation, {task.formulation for task in index.tasks})
    chosen = [
        task
        for task in index.tasks
        if wanted_benchmark in (None, task.benchmark.lower())
        and wanted_language in (None, task.language.lower())
        and wanted_formulation in (None, task.formulation.lower())
    ]
    if not chosen:
        raise fail("no task has all of these: drop a filter (`finetasks-afr tasks list --benchmark NAME` alone)", 1)
    _print_lines(chosen)
    typer.echo(f"{len(chosen)} task(s)", err=True)


def _matching(text: str, index: TaskIndex) -> list[TaskEntry]:
    """Tasks whose name or benchmark holds `text` (case-insensitive)."""
    needle = text.lower().split("|")[0]
    return [task for task in index.tasks if needle in task.name.lower() or needle in task.benchmark.lower()]


@tasks_app.command("search")
def search_command(
    text: Annotated[str, typer.Argument(help="Part of a task or benchmark name, or a misspelling.")],
) -> None:
    """Tasks whose name or benchmark contains TEXT; for a misspelling, the closest task and benchmark names."""
    index = read_index()
    found = _matching(text, index)
    if found:
        _print_lines(found)
        typer.echo(f"{len(found)} task(s) match {text!r}", err=True)
        return
    names = [task.name for task in index.tasks] + sorted({task.benchmark for task in index.tasks})
    close = _close(text.split("|")[0], names)
    if not close:
        raise fail(f"no task or benchmark matches {text!r}, nor any close spelling; `finetasks-afr tasks list`", 1)
    typer.echo(f"no task or benchmark contains {text!r}; closest: {', '.join(close)}", err=True)
    by_name = index.by_name()
    _print_lines([by_name[name] for name in close if name in by_name])
    raise typer.Exit(1)


@tasks_app.command("show")
def show_command(
    name: Annotated[str, typer.Argument(help="A task name (a `task|k` sweep entry is accepted).")],
) -> None:
    """Every field of one task: benchmark, language, formulation, prompt words, metrics, dataset, splits, and
    whether its data can be read here (local mirror, hub cache, or the hub)."""
    index = read_index()
    task = index.by_name().get(name.split("|")[0].strip())
    if task is None:
        close = _close(name.split("|")[0], [entry.name for entry in index.tasks])
        hint = f"; did you mean {', '.join(close)}?" if close else "; `finetasks-afr tasks search TEXT` finds names"
        raise fail(f"no task named {name!r}{hint}")
    words = index.words.get(task.words, {})
    rows = [
        ("task", task.name),
        ("benchmark", task.benchmark),
        ("category", task.category),
        ("language", task.language),
        ("formulation", task.formulation),
        ("prompt", f"{PROMPT_LABEL.get(task.prompt, task.prompt)} words" + (f" ({task.words})" if task.words else "")),
        ("prompt words", ", ".join(f"{field}={word}" for field, word in words.items()) or "none"),
        ("metrics", ", ".join(task.metrics)),
        ("random baseline", f"{task.random_baseline:g}" if task.random_baseline == task.random_baseline else "none"),
        (
            "dataset",
            f"{task.dataset}: {task.hf_repo}" + (f"@{task.hf_revision}" if task.hf_revision else " (unpinned)"),
        ),
        ("config", task.subset),
        ("evaluation splits", ", ".join(task.evaluation_splits)),
        ("few-shot split", task.few_shots_split or "none (0-shot only)"),
        ("available splits", ", ".join(task.hf_avail_splits)),
    ]
    if task.generation_size is not None:
        rows.append(("generation size", str(task.generation_size)))
    rows.append(("data here", reachability(task, index)))
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        typer.echo(f"{label:<{width}}  {value}")


def register(app: typer.Typer) -> None:
    app.add_typer(tasks_app, name="tasks", help="List, search and show the suite's tasks (fast: no lighteval import).")

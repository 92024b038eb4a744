"""`finetasks-afr recommend`: rank pretrained models for a language by (pseudo-)perplexity, without fine-tuning.

Method and definitions: :mod:`finetasks_afr.perplexity.recommend`;
agreement with a reference ranking: :mod:`finetasks_afr.perplexity.rank_agreement`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from finetasks_afr.cli.common import console as err_console
from finetasks_afr.cli.common import fail, named_write_errors, require_device, require_output_file
from finetasks_afr.perplexity import recommend as rec
from finetasks_afr.perplexity.rank_agreement import (
    DEFAULT_P,
    ReferenceFileError,
    agreement,
    match_names,
    read_reference,
)

ModelOpt = Annotated[
    list[str],
    typer.Option(
        "--model",
        "-m",
        help="Model to rank (repeatable): a local directory or hub id, optionally LABEL=PATH_OR_ID. "
        "Offline (HF_HUB_OFFLINE=1) only local files are used.",
    ),
]
TextOpt = Annotated[list[str] | None, typer.Option("--text", help="A text to score (repeatable).")]
FileOpt = Annotated[Path | None, typer.Option("--file", help="Texts, one per line (blank lines skipped).")]
TextsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--texts",
        help="Dataset texts DATASET:CONFIG[:SPLIT] (repeatable), deduplicated, e.g. sib200:hau_Latn; every dataset "
        "whose benchmark module declares a text field (an unknown one lists them). Read from the mirror "
        "(--data-dir / $FINETASKS_AFR_DATA_DIR) when it has the config, else the hub.",
    ),
]


def _collect_texts(text: list[str] | None, file: Path | None, texts: list[str] | None) -> list[str]:
    collected = [t.strip() for t in text or [] if t.strip()]
    if file is not None:
        collected += rec.read_text_file(file)
    for spec in texts or []:
        collected += rec.load_dataset_texts(spec)
    if not collected:
        raise rec.RecommendError("no text to score: give --text, --file or --texts (a non-empty one)")
    return collected


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def _family_table(results: list[rec.ModelResult], level: float) -> Table:
    first = results[0]
    family = "masked LMs" if first.kind == rec.MASKED else "causal LMs"
    table = Table(title=f"{family} ranked by {first.metric} (lower is better)")
    columns = ["rank", "model", first.metric, f"{int(level * 100)}% CI", "P(best)", "sentences", "tokens scored"]
    others = [m for m in (rec.CAUSAL_METRICS if first.kind == rec.CAUSAL else rec.MASKED_METRICS) if m != first.metric]
    columns += others
    for column in columns:
        table.add_column(column, justify="left" if column == "model" else "right")
    for r in results:
        row = [str(r.rank), r.model, _fmt(r.score), f"[{_fmt(r.ci_low)}, {_fmt(r.ci_high)}]", _fmt(r.p_best, 2)]
        row += [str(r.n_sentences), str(r.n_scored)]
        row += [_fmt(getattr(r, metric)) for metric in others]
        table.add_row(*row)
    return table


def _require_shared_names(reference_path: Path, labels: list[str]) -> None:
    """ReferenceFileError when the reference ranks none of the models (a file of sentences, another language's
    leaderboard): every agreement would be 0 with nothing shared, which reads like a finding."""
    reference = read_reference(reference_path)
    mapping = match_names(labels, reference.names)
    if not set(mapping.values()) & set(reference.names):
        shown = ", ".join(repr(name[:40]) for name in reference.names[:3])
        raise ReferenceFileError(
            f"--reference {reference_path}: none of its {len(reference.names)} names is one of the models ranked "
            f"({', '.join(labels)}); it starts with {shown}. fix: list the models' names (repository ids, or the "
            "last part of their paths), one per line best first, or a CSV with model,score columns"
        )


def _agreements(recommendation: rec.Recommendation, reference_path: Path, higher: bool, p: float) -> dict[str, Any]:
    """Agreement of each family's ranking with the reference (our names mapped onto the reference's)."""
    reference = read_reference(reference_path, higher_is_better=higher)
    out: dict[str, Any] = {}
    for kind in rec.KINDS:
        results = recommendation.family(kind)
        if not results:
            continue
        mapping = match_names([r.model for r in results], reference.names)
        ours = [mapping[r.model] for r in results]
        scores = {mapping[r.model]: -r.score for r in results if math.isfinite(r.score)}
        result = agreement(ours, scores, reference, p).as_dict()
        result["reference"] = reference.source
        out[kind] = result
    return out


def _agreement_table(agreements: dict[str, Any]) -> Table:
    table = Table(title="agreement with the reference ranking")
    for column in ("family", "p", "RBO@k", "RBO_ext", "Kendall tau", "p-value", "shared", "not in reference"):
        table.add_column(column, justify="left" if column in ("family", "not in reference") else "right")
    for kind, a in agreements.items():
        table.add_row(
            kind,
            f"{a['p']:g}",
            _fmt(a["rbo"]),
            _fmt(a["rbo_ext"]),
            _fmt(a["kendall_tau"]),
            _fmt(a["kendall_p_value"]),
            str(a["n_shared"]),
            ", ".join(a["ours_only"]) or "-",
        )
    return table


def recommend_command(
    model: ModelOpt,
    text: TextOpt = None,
    file: FileOpt = None,
    texts: TextsOpt = None,
    max_texts: Annotated[int | None, typer.Option("--max-texts", help="Score a seeded sample of N texts.")] = None,
    kind: Annotated[
        str, typer.Option("--kind", help="auto (from the config), masked or causal, for all models.")
    ] = "auto",
    fraction: Annotated[
        float, typer.Option("--fraction", help="KPPPL: share of each sentence's tokens masked (1.0 = classic PPPL).")
    ] = rec.DEFAULT_FRACTION,
    mask_draws: Annotated[int, typer.Option("--mask-draws", help="KPPPL: independent mask draws per sentence.")] = 1,
    masked_metric: Annotated[
        str,
        typer.Option(
            "--masked-metric", help="Rank masked LMs by kpppl (Koya) or pseudo_bits_per_byte (tokenizer-fair)."
        ),
    ] = rec.KPPPL,
    causal_metric: Annotated[
        str, typer.Option("--causal-metric", help="Rank causal LMs by bits_per_byte (tokenizer-free) or perplexity.")
    ] = rec.BITS_PER_BYTE,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates for the CI (0: none).")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seeds the text sample, mask positions and bootstrap.")] = 0,
    device: Annotated[str, typer.Option("--device", help="torch device: cpu, cuda, cuda:1 ...")] = "cpu",
    batch_size: Annotated[
        int, typer.Option("--batch-size", help="Rows per forward pass (masked copies / texts).")
    ] = 64,
    max_length: Annotated[
        int | None, typer.Option("--max-length", help="Override the model's maximum length (tokens).")
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write the ranking: .csv or .json (atomic).")] = None,
    reference: Annotated[
        Path | None,
        typer.Option(
            "--reference", help="Reference ranking: CSV with model,score columns, or one model per line (best first)."
        ),
    ] = None,
    reference_order: Annotated[
        str, typer.Option("--reference-order", help="Is a higher reference score better (higher) or worse (lower)?")
    ] = "higher",
    rbo_p: Annotated[float, typer.Option("--rbo-p", help="RBO persistence p (top-weightedness).")] = DEFAULT_P,
) -> None:
    """Rank models for a language by Koya pseudo-perplexity (masked LMs) or bits per byte (causal LMs)."""
    if reference_order not in ("higher", "lower"):
        raise fail(f"--reference-order must be higher or lower, got {reference_order!r}")
    if not 0.0 < rbo_p < 1.0:
        raise fail(f"--rbo-p must lie in (0, 1), got {rbo_p}")
    if out is not None:  # a mistyped --out (x.txt, a folder) is found before the models are scored, not after
        require_output_file(out, rec.OUTPUT_SUFFIXES)
    require_device(device)
    settings = rec.Settings(
        fraction=fraction,
        mask_draws=mask_draws,
        seed=seed,
        n_boot=bootstrap,
        causal_metric=causal_metric,
        masked_metric=masked_metric,
        device=device,
        batch_size=batch_size,
        max_length=max_length,
    )
    try:
        settings.validate()
        specs = [rec.ModelSpec.parse(spec, kind) for spec in model]
        if reference is not None:  # fail before the (slow) scoring
            _require_shared_names(reference, [spec.label for spec in specs])
        corpus = rec.sample_texts(_collect_texts(text, file, texts), max_texts, seed)
        recommendation = _run(specs, corpus, settings)
        agreements = (
            _agreements(recommendation, reference, reference_order == "higher", rbo_p) if reference is not None else {}
        )
        if out is not None:
            with named_write_errors(out, kept=f"any previous {out.name} was kept and no partial file is left"):
                rec.write_output(out, recommendation, agreements)
    except (rec.RecommendError, ReferenceFileError) as error:
        raise fail(str(error)) from None
    _show(recommendation, agreements, settings.ci_level, out)


def _run(specs: list[rec.ModelSpec], corpus: list[str], settings: rec.Settings) -> rec.Recommendation:
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        tasks: dict[str, Any] = {}

        def progress(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=total)
            bar.update(tasks[label], completed=done)

        return rec.recommend(specs, corpus, settings, progress=progress)


def _show(recommendation: rec.Recommendation, agreements: dict[str, Any], level: float, out: Path | None) -> None:
    console = Console()
    for kind in rec.KINDS:
        results = recommendation.family(kind)
        if results:
            console.print(_family_table(results, level))
    if agreements:
        console.print(_agreement_table(agreements))
    for note in recommendation.notes:
        console.print(f"note: {note}")
    if out is not None:
        console.print(f"wrote {out}")


def register(app: typer.Typer) -> None:
    app.command("recommend", help="Rank models for a language by pseudo-perplexity / bits per byte.")(recommend_command)

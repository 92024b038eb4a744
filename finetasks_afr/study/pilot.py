"""The study's round-2 pilot: how bits per byte answers a language's training share, before the design is chosen.

Round 1 moved zul and xho from 22.5% to 35% and could not resolve the step: at 1.2M tokens it moves bits per byte
by about 0.02, below the noise of three seeds. The pilot measures the dose response directly: every pilot mix gives
the two pilot languages (zul for the Nguni group, nso for Sotho-Tswana) the same share s, Somali its control 10%,
and fills the rest with unevaluated NCHLT text (afr and tso, `design.FILLER_FILES`), so s is the only thing that
changes. Five shares two seeds apart each, a short budget with a decaying learning rate, each run scored at its last
checkpoint on the `flores_ppl` texts of both languages by the one scoring core (`perplexity.recommend.score_causal`:
the bits per byte of the `flores_ppl` tasks).

From the points, per language: the least-squares slope of bits per byte on log2(share) (the change per doubling),
the seed noise (the pooled standard deviation of two seeds at the same share; it holds each seed's own offset,
its initialisation), the paired noise (the residual once an offset per seed is fitted: what the study's
seed-paired comparisons face), and for candidate designs (shares a ratio r apart) the predicted contrast
slope x log2(r) against twice the standard error of a seed-paired difference of two 3-seed means,
paired sd x sqrt(2/3): a design is resolvable when every adjacent contrast exceeds it.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from analysis.base.io import atomic_write_text
from finetasks_afr.study.design import CONTROL, FILLER_FILES, StudySizes

PILOT_LANGUAGES = ("zul", "nso")
PILOT_SHARES = (0.025, 0.05, 0.10, 0.20, 0.40)
PILOT_SEEDS = (1, 2)
CONTROL_SHARE = 0.10
PILOT_STEPS = 200
DESIGN_SEEDS = 3  # the study's seeds per mix, for the resolvability of a candidate design
CANDIDATE_RATIOS = (1.5, 2.0, 2.25, 2.5, 3.0)


def pilot_mix(share: float) -> dict[str, float]:
    """Both pilot languages at `share`, the control at 10%, the rest split evenly over the fillers."""
    rest = 1.0 - len(PILOT_LANGUAGES) * share - CONTROL_SHARE
    if rest < 0:
        raise ValueError(f"a pilot share of {share} leaves no room for the control's {CONTROL_SHARE}")
    # rounded, so that the shares' decimal forms sum to exactly 1 (`corpus.block_counts` checks it in fractions)
    filler = {language: round(rest / len(FILLER_FILES), 12) for language in FILLER_FILES}
    return {**dict.fromkeys(PILOT_LANGUAGES, share), CONTROL: CONTROL_SHARE, **filler}


def pilot_sizes() -> StudySizes:
    """The study's model and batch, a short budget (one checkpoint, at the end) and a learning rate decayed to 10%."""
    base = StudySizes()
    return replace(base, tokens_per_run=PILOT_STEPS * base.batch_size * base.seq_len, checkpoints=1,
                   seeds=PILOT_SEEDS, lr_scheduler="cosine_with_min_lr")  # fmt: skip


@dataclass(frozen=True)
class DoseResponse:
    """One language's pilot fit: bits per byte = intercept + slope x log2(share); `seed_sd` the seed noise."""

    language: str
    slope: float
    intercept: float
    slope_stderr: float
    seed_sd: float  # the spread of seeds at one share (pooled): what unpaired means of seeds face
    paired_sd: float  # the residual once each seed's own offset is fitted: what seed-paired differences face
    points: list[tuple[float, int, float]]  # (share, seed, bits per byte)

    def contrast(self, ratio: float) -> float:
        """The predicted bits-per-byte difference between two shares `ratio` apart (negative: more is better)."""
        return self.slope * math.log2(ratio)

    def twice_stderr(self, seeds: int = DESIGN_SEEDS) -> float:
        """Twice the standard error of a seed-paired difference of two mixes' `seeds`-seed means (the study's
        orderings pair seed s of one mix with seed s of the other: same initialisation)."""
        return 2 * self.paired_sd * math.sqrt(2 / seeds)

    def resolvable(self, ratio: float, seeds: int = DESIGN_SEEDS) -> bool:
        """Whether the contrast of shares `ratio` apart exceeds `twice_stderr`."""
        return abs(self.contrast(ratio)) > self.twice_stderr(seeds)


def fit_dose_response(language: str, points: Sequence[tuple[float, int, float]]) -> DoseResponse:
    """The least-squares line through (log2 share, bits per byte) (scipy.stats.linregress) and the pooled standard
    deviation of the seeds at each share (n - 1 in each group)."""
    from scipy import stats

    if len({share for share, _, _ in points}) < 2:
        raise ValueError(f"{language}: the pilot needs at least two shares to fit a slope")
    fit = stats.linregress([math.log2(share) for share, _, _ in points], [bpb for _, _, bpb in points])
    groups: dict[float, list[float]] = {}
    for share, _, bpb in points:
        groups.setdefault(share, []).append(bpb)
    squares = sum(sum((x - sum(g) / len(g)) ** 2 for x in g) for g in groups.values())
    freedom = sum(len(g) - 1 for g in groups.values())
    seed_sd = math.sqrt(squares / freedom) if freedom else math.nan
    return DoseResponse(language, float(fit.slope), float(fit.intercept), float(fit.stderr), seed_sd,
                        paired_residual_sd(points), list(points))  # fmt: skip


def paired_residual_sd(points: Sequence[tuple[float, int, float]]) -> float:
    """The residual standard deviation of bits per byte = a + b log2(share) + an offset per seed (least squares,
    n - parameters degrees of freedom): the noise left in a seed-paired comparison; NaN without a degree of freedom."""
    import numpy as np

    seeds = sorted({seed for _, seed, _ in points})
    design = np.array([[1.0, math.log2(share), *(float(seed == s) for s in seeds[1:])] for share, seed, _ in points])
    target = np.array([bpb for _, _, bpb in points])
    coefficients, *_ = np.linalg.lstsq(design, target, rcond=None)
    freedom = len(points) - design.shape[1]
    if freedom <= 0:
        return math.nan
    return float(math.sqrt(float(np.sum((target - design @ coefficients) ** 2)) / freedom))


def pilot_texts(mirror: Path, language: str) -> list[str]:
    """The texts of the `flores_ppl_<language>` task (SIB-200's FLORES sentences), read from the mirror."""
    import os

    from lighteval.tasks.lighteval_task import LightevalTask

    os.environ["FINETASKS_AFR_DATA_DIR"] = str(Path(mirror).resolve())
    from finetasks_afr.benchmarks import all_tasks
    from finetasks_afr.tasks import TASK_INFO  # noqa: F401 (first: the suite's fixes, which all_tasks needs)

    config = next(c for c in all_tasks() if c.name == f"flores_ppl_{language}")
    return [doc.query for doc in LightevalTask(config).get_docs()]


def bits_per_byte(checkpoint: Path, texts: Sequence[str]) -> float:
    """The corpus bits per byte of `texts` under the checkpoint (the `flores_ppl` tasks' definition)."""
    from finetasks_afr.perplexity.recommend import corpus_score, load_model, score_causal

    model = load_model(str(checkpoint), kind="causal", local_files_only=True)
    return corpus_score(score_causal(model, texts), "bits_per_byte")


def run_pilot(shared_data: Path, out: Path, *, threads: int = 2, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Train the pilot's runs (resumable: a finished run is reused), score them, fit, write `out/pilot.json`."""
    from finetasks_afr.study.run import prepare_mirror
    from finetasks_afr.study.train import train_study_run, train_study_tokenizer

    out = Path(out)
    sizes = pilot_sizes()
    started = time.perf_counter()
    mirror = prepare_mirror(shared_data, out)
    tokenizer = train_study_tokenizer(shared_data, out / "tokenizer", sizes.vocab_size)
    texts = {language: pilot_texts(mirror, language) for language in PILOT_LANGUAGES}
    points: dict[str, list[tuple[float, int, float]]] = {language: [] for language in PILOT_LANGUAGES}
    for share in PILOT_SHARES:
        for seed in sizes.seeds:
            name = f"pilot-{share:g}"
            folder = train_study_run(tokenizer, shared_data, name, seed, out / "checkpoints" / name / f"seed-{seed}",
                                     sizes, threads=threads, shares=pilot_mix(share))  # fmt: skip
            last = max(folder.glob("checkpoint-*"), key=lambda path: int(path.name.split("-")[1]))
            for language in PILOT_LANGUAGES:
                points[language].append((share, seed, bits_per_byte(last, texts[language])))
            log(f"pilot {name} seed {seed}: " + ", ".join(f"{lang} {pts[-1][2]:.4f}" for lang, pts in points.items()))
    fits = {language: fit_dose_response(language, pts) for language, pts in points.items()}
    result = pilot_summary(fits, sizes, time.perf_counter() - started)
    atomic_write_text(out / "pilot.json", json.dumps(result, indent=2) + "\n")
    return result


def pilot_summary(fits: Mapping[str, DoseResponse], sizes: StudySizes, seconds: float) -> dict[str, Any]:
    """What the pilot found and what it implies for a design of `DESIGN_SEEDS` seeds per mix."""
    return {
        "mixes": {f"{share:g}": pilot_mix(share) for share in PILOT_SHARES},
        "sizes": asdict(sizes),
        "fits": {language: asdict(fit) for language, fit in fits.items()},
        "designs": {f"{ratio:g}x": _design(fits, ratio) for ratio in CANDIDATE_RATIOS},
        "seconds": round(seconds, 1),
    }


def _design(fits: Mapping[str, DoseResponse], ratio: float) -> dict[str, dict[str, Any]]:
    """Per language: the predicted contrast of shares `ratio` apart, twice its standard error, and the verdict."""
    return {
        language: {
            "contrast": round(fit.contrast(ratio), 4),
            "twice_stderr": round(fit.twice_stderr(), 4),
            "resolvable": fit.resolvable(ratio),
        }
        for language, fit in fits.items()
    }

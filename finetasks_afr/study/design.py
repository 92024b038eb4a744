"""The study's design: which languages, which mixes, how much of everything, all in one place.

Two language groups whose training share moves in opposite directions across the mixes (Nguni: zul and xho;
Sotho-Tswana: nso and tsn) and a control (Somali) whose share never changes. A task that carries signal for a
language ranks the mixes by that language's share; Somali's tasks can order the mixes only by noise. The sizes are
chosen so that `make study` runs in at most two hours on two CPU cores (README, "A real micro-scale study").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# Training text under the shared data root (../shared/data): NCHLT "improved" (lower-cased, no punctuation or
# digits, government domain) and Somali Wikipedia. Each folder's SOURCE.md holds the overlap checks.
CORPUS_FILES: dict[str, str] = {
    "zul": "corpus/nchlt_improved/zul.txt",
    "xho": "corpus/nchlt_improved/xho.txt",
    "nso": "corpus/nchlt_improved/nso.txt",
    "tsn": "corpus/nchlt_improved/tsn.txt",
    "som": "corpus/somwiki/som.txt",
}
LANGUAGES: tuple[str, ...] = tuple(CORPUS_FILES)
CONTROL = "som"
# Unevaluated filler (round 2's pilot): NCHLT text of languages no study task scores, so a mix can give a studied
# language a small share without growing any other studied language's share.
FILLER_FILES: dict[str, str] = {"afr": "corpus/nchlt_improved/afr.txt", "tso": "corpus/nchlt_improved/tso.txt"}

# Each mix's share of a run's training tokens, per language (the design).
MIXES: dict[str, dict[str, float]] = {
    "mix-N": {"zul": 0.35, "xho": 0.35, "nso": 0.10, "tsn": 0.10, "som": 0.10},
    "mix-B": {"zul": 0.225, "xho": 0.225, "nso": 0.225, "tsn": 0.225, "som": 0.10},
    "mix-S": {"zul": 0.10, "xho": 0.10, "nso": 0.35, "tsn": 0.35, "som": 0.10},
}

# The designed truth: for each language with one, the mixes from best to worst (its share, largest first).
DESIGNED_ORDER: dict[str, tuple[str, ...]] = {
    "zul": ("mix-N", "mix-B", "mix-S"),
    "xho": ("mix-N", "mix-B", "mix-S"),
    "nso": ("mix-S", "mix-B", "mix-N"),
    "tsn": ("mix-S", "mix-B", "mix-N"),
}


@dataclass(frozen=True)
class ModelShape:
    """The tiny Llama (about 3.2M parameters with the 8k vocabulary, 1.05M of them outside the embeddings)."""

    hidden_size: int = 128
    layers: int = 4
    heads: int = 4
    intermediate_size: int = 512
    max_position_embeddings: int = 1024
    initializer_range: float = 0.02


@dataclass(frozen=True)
class StudySizes:
    """How big each stage is. The defaults are the study; `slice_sizes` is the CI slice."""

    vocab_size: int = 8192
    tokens_per_run: int = 1_228_800  # 300 steps x 32 sequences x 128 tokens
    seq_len: int = 128
    batch_size: int = 32
    checkpoints: int = 10  # one every tenth of the budget
    learning_rate: float = 2e-3
    warmup_steps: int = 20
    lr_scheduler: str = "constant_with_warmup"  # or "cosine_with_min_lr": decayed to 10% by the last step
    seeds: tuple[int, ...] = (1, 2, 3)
    mixes: tuple[str, ...] = tuple(MIXES)
    max_samples: int | None = 32  # documents per task and checkpoint (lighteval's max_samples: the first N)
    tasks: tuple[str, ...] | None = None  # None: every suite task with local data for the study's languages
    shape: ModelShape = field(default_factory=ModelShape)

    @property
    def steps(self) -> int:
        return self.tokens_per_run // (self.seq_len * self.batch_size)

    @property
    def save_every(self) -> int:
        return max(1, self.steps // self.checkpoints)


def slice_sizes() -> StudySizes:
    """The CI slice: one mix, one seed, two checkpoints, three tasks, a few documents each."""
    return StudySizes(
        vocab_size=1024,
        tokens_per_run=2 * 4 * 64 * 8,
        seq_len=64,
        batch_size=4,
        checkpoints=2,
        seeds=(1,),
        mixes=("mix-N",),
        max_samples=4,
        tasks=("flores_ppl_zul", "sib200_zul_cf", "winogrande_afr_zul_mcf"),
        shape=ModelShape(hidden_size=32, layers=1, heads=2, intermediate_size=64),
    )


def corpus_path(shared_data: Path, language: str) -> Path:
    """The training text of `language` (a studied language or a filler) under the shared data root."""
    return Path(shared_data) / {**CORPUS_FILES, **FILLER_FILES}[language]

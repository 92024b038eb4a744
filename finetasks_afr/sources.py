"""Where every dataset our LightEval tasks read comes from: its hub repository, or a local mirror.

LightEval loads task data with ``load_dataset(path=hf_repo, name=hf_subset, revision=hf_revision)``.
Task definitions take ``hf_repo`` / ``hf_revision`` from :func:`hf_location`, which returns the published
hub repository (with a pinned revision where one is known) or, when ``$FINETASKS_AFR_DATA_DIR`` is set and
holds a mirror of that dataset, the local mirror directory. A mirror has the same config names, split names
and row schema as the hub, so one task definition works on both.

Mirror layout (``<DATA_DIR>`` = ``$FINETASKS_AFR_DATA_DIR``; build it with ``finetasks-afr data mirror`` on a
machine with hub access, or ``finetasks-afr data import-raw`` from the raw GitHub releases; see
:mod:`finetasks_afr.mirror`)::

    <DATA_DIR>/<key>/README.md              YAML front matter: configs (config_name, data_files: [{split, path}])
                                            and dataset_info (config_name, features) per config
    <DATA_DIR>/<key>/<config>/<split>.jsonl one JSON object per line, the hub's field names and types

``<key>`` is a key of :data:`SOURCES`. A dataset directory counts as a mirror only once its README.md exists
(the README is written last), so a half-built mirror is never picked up. A key without a mirror falls back
to the hub, also when the data dir is set.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

DATA_DIR_ENV = "FINETASKS_AFR_DATA_DIR"
README_NAME = "README.md"


@dataclass(frozen=True)
class DatasetSource:
    """One dataset as published on the Hugging Face Hub."""

    key: str
    hub_repo: str
    revision: str | None  # pinned commit/ref; None = unpinned (see notes)
    splits: tuple[str, ...]  # hub split names
    notes: str  # what is unverified


_BTG_REPO = "Institute-Disease-Modeling/mmlu-winogrande-afr"
_BTG_NOTE = (
    "Bridging-the-Gap hub configs were NOT found offline: config names here are project-defined "
    "(the hub README only links the repo; its files come from data/create_parquet_ready_release.py). "
    "Mirror built from the raw GitHub CSVs. Unpinned (no revision known)."
)

SOURCES: dict[str, DatasetSource] = {
    source.key: source
    for source in (
        DatasetSource(
            key="winogrande_afr",
            hub_repo=_BTG_REPO,
            revision=None,
            splits=("train_s", "dev", "test"),
            notes=_BTG_NOTE + " Configs: af am bm ig nso sn st tn ts xh zu + en (English originals, project-"
            "defined). Fields qID, Sentence, Option1, Option2, Answer; Answer is the string '1'/'2' in the "
            "mirror, but a hub CSV read by datasets may type it int64: accept both.",
        ),
        DatasetSource(
            key="mmlu_clinical_afr",
            hub_repo=_BTG_REPO,
            revision=None,
            splits=("dev", "val", "test"),
            notes=_BTG_NOTE + " Configs <subject>_<lang> for clinical_knowledge, college_medicine, virology "
            "(+ _en from the un-suffixed raw files). Fields Question, OptionA..OptionD, Answer (letter).",
        ),
        DatasetSource(
            key="belebele",
            hub_repo="facebook/belebele",
            revision=None,
            splits=("test",),
            notes="Unpinned. Configs = FLORES codes (e.g. zul_Latn, swh_Latn). A raw import covers only the "
            "12 dialects in Bridging-the-Gap's copy (eng_Latn + 11 African); its `ds` dates differ per "
            "dialect and were not compared with the hub.",
        ),
        DatasetSource(
            key="afrimmlu",
            hub_repo="masakhane/afrimmlu",
            revision="refs/pr/1",
            splits=("validation", "dev", "test"),
            notes="Pinned to refs/pr/1 as in lighteval ('Temporary until the pr is merged'); that the PR adds "
            "the `dev` split (and maybe list-typed `choices`) is inferred, not verified. lm-eval uses "
            "validation/test on main. No raw source here: hub only.",
        ),
        DatasetSource(
            key="afrixnli",
            hub_repo="masakhane/afrixnli",
            revision=None,
            splits=("validation", "test"),
            notes="Unpinned. label is int (0 entailment, 1 neutral, 2 contradiction). No raw source: hub only.",
        ),
        DatasetSource(
            key="afrimgsm",
            hub_repo="masakhane/afrimgsm",
            revision=None,
            splits=("train", "test"),
            notes="Unpinned. Type of answer_number unverified (a hub commit changed it int -> string). "
            "No raw source: hub only.",
        ),
        DatasetSource(
            key="sib200",
            hub_repo="Davlan/sib200",
            revision=None,
            splits=("train", "validation", "test"),
            notes="Unpinned. Raw dev.tsv maps to hub `validation` (per lm-eval/lighteval usage); whether the hub "
            "repo is a parquet/data-files repo or a loading script (refused by datasets>=4) is unverified.",
        ),
        DatasetSource(
            key="masakhanews",
            hub_repo="masakhane/masakhanews",
            revision=None,
            splits=("train", "validation", "test"),
            notes="Unpinned. Hub schema unresolved offline: current loaders read `category` (str); the older "
            "loading script had `label` (int) + headline_text. The raw GitHub data has no train split, so a "
            "raw-import mirror has validation/test only.",
        ),
        DatasetSource(
            key="afrisenti",
            hub_repo="masakhane/afrisenti",
            revision=None,
            splits=("train", "validation", "test"),
            notes="Unpinned. label assumed a string (negative/positive/neutral) as in the raw TSV. The raw data "
            "here has no train split (lm-eval's few-shot split), so a raw-import mirror has validation/test "
            "only; the raw orm files' extra ID column is dropped.",
        ),
        DatasetSource(
            key="afriqa",
            hub_repo="masakhane/afriqa-gold-passages",
            revision=None,
            splits=("train", "validation", "test"),
            notes="Unpinned. lm-eval loads it with trust_remote_code (a loading script): datasets>=4 refuses "
            "scripts, so the hub repo may only load from its parquet export (revision "
            "'refs/convert/parquet'), unverified. Typing of answer_pivot on the hub is unverified (the raw "
            "JSON has a struct {answer_start: [int], text: [str]}). swa has test only, yor train/test.",
        ),
        DatasetSource(
            key="naijarc",
            hub_repo="Davlan/NaijaRC",
            revision=None,
            splits=("test",),
            notes="Unpinned. Configs hau ibo yor; only the test split is known. No raw source: hub only.",
        ),
        DatasetSource(
            key="uhura_arc_easy",
            hub_repo="masakhane/uhura-arc-easy",
            revision=None,
            splits=("train", "validation", "test"),
            notes="Unpinned. zu_multiple_choice and nso_multiple_choice_unmatched have no validation split. "
            "answerKey letters vs. digits unverified. No raw source: hub only.",
        ),
    )
}


def data_dir() -> Path | None:
    """The mirror root from ``$FINETASKS_AFR_DATA_DIR``; None when unset or empty."""
    value = os.environ.get(DATA_DIR_ENV, "").strip()
    if not value:
        return None
    return Path(value).expanduser().absolute()


def source(key: str) -> DatasetSource:
    """The :class:`DatasetSource` for ``key``; KeyError naming the key when unknown."""
    try:
        return SOURCES[key]
    except KeyError:
        raise KeyError(f"unknown dataset key {key!r}; known keys: {', '.join(sorted(SOURCES))}") from None


def mirror_path(key: str, root: Path | None = None) -> Path | None:
    """``<root>/<key>`` when it holds a complete mirror (README.md present), else None."""
    source(key)
    root = data_dir() if root is None else root
    if root is None:
        return None
    path = root / key
    return path if (path / README_NAME).is_file() else None


def mirror_configs(path: Path) -> frozenset[str]:
    """The config names a mirror's README.md declares (its YAML `configs:` list)."""
    text = (path / README_NAME).read_text(encoding="utf-8")
    return frozenset(re.findall(r"^\s*-?\s*config_name:\s*['\"]?([^'\"\s]+)", text, flags=re.MULTILINE))


def hf_location(key: str, subset: str | None = None) -> tuple[str, str | None]:
    """``(hf_repo, hf_revision)`` for a LightevalTaskConfig: the local mirror when configured (and, given a
    subset, when the mirror holds that config), else the hub. A partial mirror (e.g. Belebele's 12 Bridging-the-
    Gap dialects) thus serves what it has and leaves the other configs to the hub."""
    src = source(key)
    path = mirror_path(key)
    if path is not None and (subset is None or subset in mirror_configs(path)):
        return str(path), None
    return src.hub_repo, src.revision

"""What every benchmark family shares: task names, metrics, prompt languages, clean fields, skip counting.

A benchmark module builds `Variant`s (one per language x formulation x prompt language) and turns each
into a LightevalTaskConfig with `build_config`, which also records the task's metadata (benchmark,
language, category, formulation, random baseline) in `TASK_INFO` so the analysis needs no table of its own.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lighteval.metrics.dynamic_metrics import (
    LogLikelihoodAccMetric,
    MultilingualQuasiExactMatchMetric,
    MultilingualQuasiF1ScoreMetric,
)
from lighteval.metrics.normalizations import LogProbCharNorm, LogProbPMINorm, LogProbTokenNorm
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.multilingual.utils.task_utils import get_metrics_for_formulation
from lighteval.tasks.requests import Doc
from lighteval.tasks.templates.utils.formulation import (
    CFFormulation,
    Formulation,
    HybridFormulation,
    MCFFormulation,
)
from lighteval.utils.language import Language

from finetasks_afr.languages import AfricanLanguage
from finetasks_afr.literals import native_prompt_available, prompt_language
from finetasks_afr.sources import hf_location

logger = logging.getLogger(__name__)

FORMULATIONS: dict[str, Formulation] = {"cf": CFFormulation(), "mcf": MCFFormulation(), "hybrid": HybridFormulation()}
FORMULATION_LABEL = {"cf": "CF", "mcf": "MCF", "hybrid": "HYBRID"}
PROMPTS = ("native", "en")  # in-language prompt words; English prompt words over the native content
EN_SUFFIX = "_enprompt"
FEWSHOT_SEED_NOTE = "few-shot examples: lighteval's sampler with variance seed 0 (fixed), so prompts repeat exactly"


@dataclass(frozen=True)
class TaskInfo:
    """Metadata of one task: what the score table's columns need."""

    name: str
    benchmark: str
    language: str  # ISO 639-3
    category: str  # GK, RC, RES, NLU, GEN
    formulation: str  # CF, MCF, HYBRID, GEN
    random_baseline: float
    prompt: str  # "native" or "en"
    dataset: str  # key of finetasks_afr.sources.SOURCES
    subset: str  # hf_subset


TASK_INFO: dict[str, TaskInfo] = {}
SKIPPED_ROWS: Counter[str] = Counter()  # task name -> rows that could not become a prompt


def task_name(benchmark: str, iso3: str, formulation: str | None, prompt: str) -> str:
    """`<benchmark>_<lang>_<formulation>` (no formulation for generative tasks), `_enprompt` for English words."""
    name = f"{benchmark}_{iso3}" + (f"_{formulation}" if formulation else "")
    return name + (EN_SUFFIX if prompt == "en" else "")


def prompts_for(language: AfricanLanguage) -> list[str]:
    """Prompt languages available: English words always; in-language words where literals exist."""
    if language.iso3 == "eng":
        return ["native"]  # English content: the two variants coincide
    return ["native", "en"] if native_prompt_available(language.iso3) else ["en"]


def words_language(language: AfricanLanguage, prompt: str) -> Language:
    """The lighteval Language whose translation literals build the prompt."""
    return Language.ENGLISH if prompt == "en" else prompt_language(language.iso3, "native")


def content_language(language: AfricanLanguage) -> Language:
    """The Language of the text, for generative-metric normalisers (English whitespace rules as fallback)."""
    return language.lighteval or Language.ENGLISH


_SPACES = re.compile(r"\s+")


def clean(text: Any) -> str:
    """One line, single spaces, trimmed: no doubled spaces or stray newlines in any prompt field."""
    if text is None:
        raise ValueError("missing field")
    return _SPACES.sub(" ", str(text)).strip()


def skipping(name: str, adapter: Callable[[dict], Any]) -> Callable[[dict], Any]:
    """Wrap an adapter: a row it cannot convert (missing field, label out of range) is skipped and counted."""

    def safe(line: dict) -> Any:
        try:
            return adapter(line)
        except (KeyError, ValueError, IndexError, TypeError, SyntaxError) as error:
            SKIPPED_ROWS[name] += 1
            if SKIPPED_ROWS[name] in (1, 10, 100, 1000):
                logger.warning("%s: skipped %d row(s) that cannot become a prompt (last: %r)", name,
                               SKIPPED_ROWS[name], error)  # fmt: skip
            return None

    return safe


def mc_metrics(formulation: Formulation) -> list:
    """acc, acc_norm (characters), acc_norm_token, acc_norm_pmi; lighteval keeps only acc for letter answers."""
    candidates = [
        LogLikelihoodAccMetric(normalization=None),
        LogLikelihoodAccMetric(normalization=LogProbCharNorm()),
        LogLikelihoodAccMetric(normalization=LogProbTokenNorm()),
        LogLikelihoodAccMetric(normalization=LogProbPMINorm()),
    ]
    return get_metrics_for_formulation(formulation, candidates)


def gen_metrics(language: AfricanLanguage) -> list:
    """F1 and prefix exact match with lighteval's multilingual normalisers (fallback: English rules)."""
    lang = content_language(language)
    return [MultilingualQuasiF1ScoreMetric(lang), MultilingualQuasiExactMatchMetric(lang, "prefix")]


def build_config(
    *,
    info: TaskInfo,
    prompt_function: Callable[[dict, str], Doc | None],
    metrics: list,
    evaluation_splits: tuple[str, ...],
    few_shots_split: str | None,
    hf_avail_splits: tuple[str, ...],
    hf_filter: Callable[[dict], bool] | None = None,
    generation_size: int | None = None,
    stop_sequence: tuple[str, ...] | None = None,
) -> LightevalTaskConfig:
    """A LightevalTaskConfig reading from the hub (pinned) or the local mirror, with its metadata recorded."""
    repo, revision = hf_location(info.dataset, info.subset)
    TASK_INFO[info.name] = info
    return LightevalTaskConfig(
        name=info.name,
        prompt_function=prompt_function,
        hf_repo=repo,
        hf_subset=info.subset,
        hf_revision=revision,
        hf_filter=hf_filter,
        hf_avail_splits=list(hf_avail_splits),
        evaluation_splits=list(evaluation_splits),
        few_shots_split=few_shots_split,
        metrics=metrics,
        generation_size=generation_size,
        stop_sequence=list(stop_sequence) if stop_sequence else None,
    )


def letter_index(letter: Any, n: int) -> int:
    """'A'..'D' (or '1'..'4') -> 0-based index; ValueError when out of range (the row is then skipped)."""
    text = str(letter).strip().upper()
    index = int(text) - 1 if text.isdigit() else "ABCDEFGHIJ".index(text) if len(text) == 1 else -1
    if not 0 <= index < n:
        raise ValueError(f"answer {letter!r} out of range for {n} choices")
    return index


def label_index(label: Any, labels: tuple[str, ...]) -> int:
    """A label given as its name or as an integer index into `labels`; ValueError when unknown."""
    if isinstance(label, bool):
        raise ValueError(f"label {label!r}")
    if isinstance(label, int) or (isinstance(label, str) and label.strip().isdigit()):
        index = int(label)
        if not 0 <= index < len(labels):
            raise ValueError(f"label {label!r} out of range")
        return index
    return labels.index(str(label).strip().lower())


@dataclass(frozen=True)
class Family:
    """A benchmark family: one dataset, one adapter, every covered language x formulation x prompt."""

    benchmark: str  # name prefix, e.g. "afrixnli"
    dataset: str  # key of SOURCES / LANGUAGE.codes
    category: str
    template: Callable[..., Callable[[dict, str], Doc | None]]  # lighteval template factory
    adapter: Callable[[dict], Any]  # dataset row -> template input; raises on a bad row
    random_baseline: float
    evaluation_splits: tuple[str, ...]
    few_shots_split: str | None
    hf_avail_splits: tuple[str, ...]
    formulations: tuple[str, ...] = ("cf", "mcf", "hybrid")
    template_kwargs: tuple[tuple[str, Any], ...] = ()
    subset: Callable[[AfricanLanguage], str] | None = None  # default: the language's code for the dataset
    few_shots_split_for: Callable[[AfricanLanguage], str | None] | None = None


def family_tasks(family: Family, languages: list[AfricanLanguage]) -> list[LightevalTaskConfig]:
    """Configs for every language x formulation x prompt language of a multiple-choice family."""
    configs = []
    for language in languages:
        subset = family.subset(language) if family.subset else language.codes[family.dataset]
        fewshot = family.few_shots_split_for(language) if family.few_shots_split_for else family.few_shots_split
        for formulation in family.formulations:
            for prompt in prompts_for(language):
                name = task_name(family.benchmark, language.iso3, formulation, prompt)
                prompt_function = family.template(
                    words_language(language, prompt),
                    skipping(name, family.adapter),
                    formulation=FORMULATIONS[formulation],
                    **dict(family.template_kwargs),
                )
                info = TaskInfo(name, family.benchmark, language.iso3, family.category,
                                FORMULATION_LABEL[formulation], family.random_baseline, prompt, family.dataset,
                                subset)  # fmt: skip
                configs.append(
                    build_config(
                        info=info,
                        prompt_function=prompt_function,
                        metrics=mc_metrics(FORMULATIONS[formulation]),
                        evaluation_splits=family.evaluation_splits,
                        few_shots_split=fewshot,
                        hf_avail_splits=family.hf_avail_splits,
                    )
                )
    return configs


def generative_tasks(
    *,
    benchmark: str,
    dataset: str,
    category: str,
    adapter: Callable[[dict], Any],
    languages: list[AfricanLanguage],
    evaluation_splits: tuple[str, ...],
    few_shots_split: Callable[[AfricanLanguage], str | None],
    hf_avail_splits: tuple[str, ...],
    generation_size: int,
) -> list[LightevalTaskConfig]:
    """QA-style generative tasks (lighteval's QA template), scored with F1 and prefix exact match."""
    from lighteval.tasks.templates.qa import get_qa_prompt_function

    configs = []
    for language in languages:
        subset = language.codes[dataset]
        for prompt in prompts_for(language):
            name = task_name(benchmark, language.iso3, None, prompt)
            info = TaskInfo(name, benchmark, language.iso3, category, "GEN", 0.0, prompt, dataset, subset)
            configs.append(
                build_config(
                    info=info,
                    prompt_function=get_qa_prompt_function(words_language(language, prompt), skipping(name, adapter)),
                    metrics=gen_metrics(language),
                    evaluation_splits=evaluation_splits,
                    few_shots_split=few_shots_split(language),
                    hf_avail_splits=hf_avail_splits,
                    generation_size=generation_size,
                    stop_sequence=("\n",),
                )
            )
    return configs

"""Machine translation tasks from (source text, reference translation) pairs, in two forms.

Both forms use lighteval's translation template (`get_translation_prompt_function`, cloze formulation), the
format of lighteval's own `flores200` tasks: `"<SRC>: <source text> <TGT>:"`, the reference following after one
space. The template has no prompt words: the labels are the languages' tags (`standardize_tag(Language.value)`
upper-cased: `EN`, `HA`, `SW`, `GAZ`), so there is one prompt variant per task (recorded as prompt "native"),
never an `_enprompt` twin. A language lighteval has no `Language` member for (Nigerian Pidgin, Acholi, Venda,
...) gets the template with English punctuation rules and its own tag (`PCM`, `ACH`, `VE`) put in place of the
stand-in's (:func:`translation_prompt`); the template itself is unchanged.

- **ll** (`formulation "PPL"`): the log-likelihood of the reference given the prompt, reported as
  `bits_per_byte` = -sum(log-probabilities of the reference's tokens) / ln 2 / (UTF-8 bytes of the reference as
  scored), summed over the corpus before dividing, exactly lighteval's own `bits_per_byte`
  (`CorpusLevelPerplexityMetric("bits_per_byte")`, fed here from the loglikelihood path instead of the rolling
  one). The bytes counted are those of the continuation lighteval scores, leading space included: the template
  puts one space before the reference and a BPE tokenizer merges it into the first word's token, so its
  log-probability cannot be left out; dividing by the bytes of exactly the text scored is lighteval's definition
  (its rolling `bits_per_byte` divides by the bytes of the scored query). Lower is better.
- **gen** (`formulation "GEN"`): greedy generation until a newline, scored with chrF++ (`chrf++`,
  sacreBLEU's `CHRF(word_order=2)` over the corpus). lighteval 0.13's own `Metrics.chrf_plus` hands sacreBLEU the
  references per sentence instead of per stream (upstream issue huggingface/lighteval#1112, open; pull requests
  #1176, #1234), which scores only the first hypothesis against every reference of the corpus pooled:
  :data:`CHRF_PLUS_PLUS` is the same metric (same name, same preparator, same sacreBLEU settings) with the one
  reference stream sacreBLEU expects. Random baseline 0.0 (an empty or unrelated output scores near 0).

Why "PPL" for the log-likelihood form: the analysis treats formulation PPL as a continuous, lower-is-better task
with no chance level (random baseline NaN, so the non-randomness criterion is "not applicable", as for the
perplexity tasks), subject to the SNR threshold (only GEN is exempt), and lists it in both the cf and mcf suites:
scoring a reference translation involves no choice between options, so it belongs to neither formulation. "CF"
would put it in the cf suite only and promise a chance level it has not. Category GEN for both forms: the model
is scored as a producer of the target language's text, as the perplexity tasks are.

Few-shot: both forms work 0-shot and k-shot (lighteval's `task|k`), the examples drawn from the task's few-shot
split by the suite's sampler (a document never among its own examples). k-shot is the intended use: with the
bare `EN: ... HA:` format a 0-shot model does not know that a translation is asked for, and only the reference's
tokens are scored in the ll form, so the examples cost context but never enter the metric.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sacrebleu
from langcodes import standardize_tag
from lighteval.metrics.metrics_corpus import CorpusLevelComputation, CorpusLevelPerplexityMetric
from lighteval.metrics.sample_preparator import (
    GenerativeCorpusMetricInput,
    GenerativePreparator,
    PerplexityCorpusMetricInput,
    Preparator,
)
from lighteval.metrics.utils.metric_utils import CorpusLevelMetric
from lighteval.models.model_output import ModelResponse
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc, SamplingMethod
from lighteval.tasks.templates.translation import TranslationInput, get_translation_prompt_function
from lighteval.tasks.templates.utils.formulation import CFFormulation
from lighteval.utils.language import Language

from analysis.scores.task_info import TaskInfo
from finetasks_afr.benchmarks.common import build_config, clean, skipping
from finetasks_afr.prompts.languages import AfricanLanguage

FORMS: dict[str, str] = {"ll": "PPL", "gen": "GEN"}  # task-name form -> formulation label
CATEGORY = "GEN"
NO_RANDOM_BASELINE = math.nan
GEN_RANDOM_BASELINE = 0.0
STOP = ("\n",)
LL_METRIC_NAME = "bits_per_byte"
GEN_METRIC_NAME = "chrf++"


# ------------------------------------------------------------------------------------------------ metrics


class ReferenceBytes(Preparator):
    """Per document: the log-probability of the gold continuation and its UTF-8 byte count, for lighteval's
    corpus-level `bits_per_byte` (sum of log-probabilities / sum of bytes / ln 2).

    `ModelResponse.logprobs[i]` is lighteval's summed log-probability of `doc.choices[i]` given the prompt (the
    loglikelihood path); a translation document has one choice, the reference, and its gold index points at it.
    """

    def prepare(self, doc: Doc, model_response: ModelResponse, **kwargs: Any) -> PerplexityCorpusMetricInput:
        golds = doc.gold_index if isinstance(doc.gold_index, list) else [doc.gold_index]
        if len(golds) != 1 or not doc.choices:
            raise ValueError(
                f"{doc.task_name}: a translation document needs exactly one gold reference among its choices, got "
                f"gold_index={doc.gold_index!r} over {len(doc.choices or [])} choice(s); fix the prompt function"
            )
        gold = golds[0]
        reference = doc.choices[gold]
        return PerplexityCorpusMetricInput(
            logprobs=float(model_response.logprobs[gold]),  # type: ignore[arg-type]  # declared list, one sum
            weights=len(reference.encode("utf-8")),  # type: ignore[arg-type]
        )


class CorpusChrF(CorpusLevelComputation):
    """sacreBLEU chrF (chrF++ with `word_order=2`) over the corpus, one reference per document, in the stream
    layout sacreBLEU expects (`references=[[ref_1, ..., ref_n]]`); hypotheses and references stripped (chrF
    ignores whitespace in character n-grams, and word n-grams split on it, so this changes no score)."""

    def __init__(self, word_order: int = 2) -> None:
        self.word_order = word_order

    def compute_corpus(self, items: list[GenerativeCorpusMetricInput]) -> float:
        hypotheses: list[str] = []
        references: list[str] = []
        for item in items:
            golds = [item.golds] if isinstance(item.golds, str) else list(item.golds)
            if len(golds) != 1:
                raise ValueError(f"chrF: expected one reference per document, got {len(golds)}: {golds!r}")
            preds = [item.preds] if isinstance(item.preds, str) else list(item.preds)
            hypotheses.append((preds[0] if preds else "").strip())
            references.append(golds[0].strip())
        metric = sacrebleu.CHRF(word_order=self.word_order)
        return float(metric.corpus_score(hypotheses, [references]).score)


BITS_PER_BYTE = CorpusLevelMetric(
    metric_name=LL_METRIC_NAME,
    sample_level_fn=ReferenceBytes(),
    category=SamplingMethod.LOGPROBS,
    corpus_level_fn=CorpusLevelPerplexityMetric("bits_per_byte"),
    higher_is_better=False,
)
CHRF_PLUS_PLUS = CorpusLevelMetric(
    metric_name=GEN_METRIC_NAME,
    sample_level_fn=GenerativePreparator(),
    category=SamplingMethod.GENERATIVE,
    corpus_level_fn=CorpusChrF(word_order=2),
    higher_is_better=True,
)


# ------------------------------------------------------------------------------------------------ prompts


@dataclass(frozen=True)
class Side:
    """One side of a translation pair: the ISO 639-3 code and lighteval's Language member (None when absent)."""

    iso3: str
    lighteval: Language | None

    @property
    def label(self) -> str:
        """The tag the template writes before the text: lighteval's rule, applied to the code when no member."""
        return standardize_tag(self.lighteval.value if self.lighteval else self.iso3).upper()

    @property
    def template_language(self) -> Language:
        """The member the template is built with (English punctuation rules stand in when there is none)."""
        return self.lighteval or Language.ENGLISH


ENGLISH = Side("eng", Language.ENGLISH)
FRENCH = Side("fra", Language.FRENCH)


def side_of(language: AfricanLanguage) -> Side:
    return Side(language.iso3, language.lighteval)


def _relabel(query: str, stand_in: tuple[str, str], real: tuple[str, str], task_name: str) -> str:
    """Put the real source/target tags in place of the stand-in's at the two ends of the template's context."""
    if stand_in == real:
        return query
    head, tail = f"{stand_in[0]}:", f" {stand_in[1]}:"
    if not (query.startswith(head) and query.endswith(tail)):
        raise ValueError(
            f"{task_name}: translation prompt {query[:40]!r}... does not start with {head!r} and end with {tail!r}; "
            "lighteval's translation template changed, update finetasks_afr.benchmarks.translation"
        )
    return f"{real[0]}:" + query[len(head) : -len(tail)] + f" {real[1]}:"


def translation_prompt(
    source: Side, target: Side, pair: Callable[[dict], tuple[str, str] | None]
) -> Callable[[dict, str], Doc | None]:
    """lighteval's translation prompt (CF) over `pair(row) -> (source text, reference)` or None (row skipped)."""

    def adapter(line: dict) -> TranslationInput | None:
        texts = pair(line)
        return None if texts is None else {"source_text": texts[0], "target_text": texts[1]}

    template = get_translation_prompt_function(
        source.template_language, target.template_language, adapter, formulation=CFFormulation()
    )
    stand_in = (
        Side(source.iso3, source.template_language).label,
        Side(target.iso3, target.template_language).label,
    )
    real = (source.label, target.label)

    def prompt(line: dict, task_name: str) -> Doc | None:
        doc = template(line, task_name)
        if doc is not None:
            doc.query = _relabel(doc.query, stand_in, real, task_name)
        return doc

    return prompt


def texts(source: str, target: str) -> tuple[str, str]:
    """Both sides cleaned (the suite's one cleaning step); ValueError when one is empty (the row is skipped)."""
    pair = (clean(source), clean(target))
    if not all(pair):
        raise ValueError("empty source or reference")
    return pair


# ------------------------------------------------------------------------------------------------ tasks


@dataclass(frozen=True)
class Direction:
    """`source -> target` with the African language on one side; `code` names it in task names (`en2xx`)."""

    source: Side
    target: Side
    code: str


def directions(language: AfricanLanguage, pivot: Side = ENGLISH) -> tuple[Direction, Direction]:
    """pivot -> language and language -> pivot, coded `<en|fr>2xx` and `xx2<en|fr>`."""
    short = {"eng": "en", "fra": "fr"}[pivot.iso3]
    own = side_of(language)
    return Direction(pivot, own, f"{short}2xx"), Direction(own, pivot, f"xx2{short}")


def reference_task_name(benchmark: str, form: str, iso3: str) -> str:
    """`<benchmark>_<form>_<iso3>`, e.g. `xlsum_ll_hau`, `afridiacritics_gen_yor`, `flores_mt_en2xx_ll_hau`.

    The suite's names end in the language code (optionally followed by cf/mcf/hybrid and `_enprompt`, which do not
    apply here), so the form comes before it; the benchmark recorded in TASK_INFO is the name without form and
    language, so an ll task and a gen task of one language are one benchmark's two formulations for the analysis
    (as CF and MCF are elsewhere)."""
    if form not in FORMS:
        raise ValueError(f"unknown translation form {form!r}; known: {', '.join(FORMS)}")
    return f"{benchmark}_{form}_{iso3}"


def mt_task_name(prefix: str, direction: Direction, form: str, iso3: str) -> str:
    """`<prefix>_<direction>_<form>_<iso3>`, e.g. `flores_mt_en2xx_ll_hau`, `mafand_mt_xx2fr_gen_bam`: the
    benchmark is `<prefix>_<direction>` (:func:`reference_task_name`)."""
    return reference_task_name(f"{prefix}_{direction.code}", form, iso3)


def pair_tasks(
    *,
    prefix: str,
    dataset: str,
    subset: str,
    language: AfricanLanguage,
    pair: Callable[[Direction], Callable[[dict], tuple[str, str] | None]],
    evaluation_splits: tuple[str, ...],
    few_shots_split: str | None,
    hf_avail_splits: tuple[str, ...],
    generation_size: int,
    pivot: Side = ENGLISH,
    forms: Sequence[str] = tuple(FORMS),
    location: tuple[str, str | None] | None = None,
) -> list[LightevalTaskConfig]:
    """The ll and gen tasks of one language in both directions (`pivot` -> language, language -> `pivot`), reading
    config `subset` of `dataset`; `pair(direction)` turns a row into (source, reference) for that direction, or None
    for a row that is no document (FLORES leaves rows out of its few-shot pool this way).

    `location` = (hf_repo, hf_revision) overrides where the config is read (default: `hf_location`, the mirror when
    it holds the config, else the hub); FLORES uses it to read both sides of a pair from one place."""

    def prompt_for(direction: Direction) -> Callable[[str], Callable[[dict, str], Doc | None]]:
        adapter = pair(direction)
        return lambda name: translation_prompt(direction.source, direction.target, skipping(name, adapter))

    configs = []
    for direction in directions(language, pivot):
        configs += reference_tasks(
            benchmark=f"{prefix}_{direction.code}",
            dataset=dataset,
            subset=subset,
            language=language,
            prompt_for=prompt_for(direction),
            evaluation_splits=evaluation_splits,
            few_shots_split=few_shots_split,
            hf_avail_splits=hf_avail_splits,
            generation_size=generation_size,
            forms=forms,
            location=location,
        )
    return configs


def field_pair(
    own: str, english: str, english_reference: str | None = None
) -> Callable[[Direction], Callable[[dict], tuple[str, str]]]:
    """Row -> (source, reference) of a dataset with one field per language: English -> X translates field `english`
    into `own`; X -> English translates `own` and is scored against `english_reference` (default `english`: SALT
    keeps a separate English target)."""

    def for_direction(direction: Direction) -> Callable[[dict], tuple[str, str]]:
        def pair(line: dict) -> tuple[str, str]:
            if direction.source.iso3 == ENGLISH.iso3:
                return texts(line[english], line[own])
            return texts(line[own], line[english_reference or english])

        return pair

    return for_direction


def reference_tasks(
    *,
    benchmark: str,
    dataset: str,
    subset: str,
    language: AfricanLanguage,
    prompt_for: Callable[[str], Callable[[dict, str], Doc | None]],
    evaluation_splits: tuple[str, ...],
    few_shots_split: str | None,
    hf_avail_splits: tuple[str, ...],
    generation_size: int,
    forms: Sequence[str] = tuple(FORMS),
    location: tuple[str, str | None] | None = None,
) -> list[LightevalTaskConfig]:
    """The ll and gen tasks (`<benchmark>_<form>_<iso3>`) of any (source, reference) prompt, not only translation.

    `prompt_for(task name)` returns the task's prompt function: a Doc whose one choice (gold index 0) is the
    reference, or None for a row that cannot become one (wrap the row adapter in `skipping(task name, ...)` so it
    is counted). Both forms share the prompt, so the ll form scores exactly the text the gen form is compared with
    (summarisation and diacritic restoration use this as translation does). `location` as in :func:`pair_tasks`."""
    configs = []
    for form in forms:
        name = reference_task_name(benchmark, form, language.iso3)
        info = TaskInfo(
            benchmark=benchmark,
            language=language.iso3,
            category=CATEGORY,
            formulation=FORMS[form],
            random_baseline=NO_RANDOM_BASELINE if form == "ll" else GEN_RANDOM_BASELINE,
            prompt="native",
            dataset=dataset,
            subset=subset,
        )
        configs.append(
            build_config(
                name=name,
                info=info,
                prompt_function=prompt_for(name),
                metrics=[BITS_PER_BYTE] if form == "ll" else [CHRF_PLUS_PLUS],
                evaluation_splits=evaluation_splits,
                few_shots_split=few_shots_split,
                hf_avail_splits=hf_avail_splits,
                generation_size=generation_size if form == "gen" else None,
                stop_sequence=STOP if form == "gen" else None,
                location=location,
            )
        )
    return configs

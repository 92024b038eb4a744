"""What every benchmark family shares: task names, metrics, prompt languages, clean fields, skip counting.

A benchmark module describes a `Family` (or builds generative tasks) and `family_tasks` turns it into one
LightevalTaskConfig per language x formulation x prompt language with `build_config`, which also records the
task's metadata (benchmark, language, category, formulation, random baseline) in `TASK_INFO` as the analysis'
own `TaskInfo`, so the analysis needs no table of its own.

`clean` is the one cleaning step every field of every benchmark goes through: text from tweets, news sites
and spreadsheets carries BOMs, zero-width characters, emoji variation selectors, literal "\\n" sequences and
decomposed accents, which a model sees as tokens but a reader of the prompt does not.
"""

from __future__ import annotations

import logging
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
from lighteval.metrics.utils.metric_utils import Metric
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

from analysis.scores.schema import ENGLISH_PROMPT_SUFFIX
from analysis.scores.task_info import TaskInfo
from finetasks_afr.data.sources import hf_location, install_lighteval_loader
from finetasks_afr.prompts.languages import AfricanLanguage
from finetasks_afr.prompts.literals import native_prompt_available, prompt_language
from finetasks_afr.prompts.text import INVISIBLE, clean  # noqa: F401 (re-exported: the benchmarks import it from here)

logger = logging.getLogger(__name__)

FORMULATIONS: dict[str, Formulation] = {"cf": CFFormulation(), "mcf": MCFFormulation(), "hybrid": HybridFormulation()}
FORMULATION_LABEL = {"cf": "CF", "mcf": "MCF", "hybrid": "HYBRID"}
PROMPTS = ("native", "en")  # in-language prompt words; English prompt words over the native content
EN_SUFFIX = ENGLISH_PROMPT_SUFFIX  # one spelling: the gap to English pairs tasks by it
FEWSHOT_SEED_NOTE = "few-shot examples: lighteval's sampler with variance seed 0 (fixed), so prompts repeat exactly"


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


def without_empty_instruction(prompt_function: Callable[[dict, str], Doc | None]) -> Callable[[dict, str], Doc | None]:
    """lighteval's continuation template sets `Doc.instruction = ""` when a row has none, and its PromptManager
    then joins "" + "\n\n" in front of every prompt: an empty instruction becomes None (no instruction)."""

    def prompt(line: dict, task_name: str) -> Doc | None:
        doc = prompt_function(line, task_name)
        if doc is not None and doc.instruction == "":
            doc.instruction = None
        return doc

    return prompt


def mc_metrics(formulation: Formulation) -> list[Metric]:
    """acc, acc_norm (characters), acc_norm_token, acc_norm_pmi; lighteval keeps only acc for letter answers."""
    candidates: list[Metric] = [
        LogLikelihoodAccMetric(normalization=None),
        LogLikelihoodAccMetric(normalization=LogProbCharNorm()),
        LogLikelihoodAccMetric(normalization=LogProbTokenNorm()),
        LogLikelihoodAccMetric(normalization=LogProbPMINorm()),
    ]
    return get_metrics_for_formulation(formulation, candidates)


def gen_metrics(answers_in: Language) -> list:
    """F1 and prefix exact match with lighteval's multilingual normaliser of the language the answers are in."""
    return [MultilingualQuasiF1ScoreMetric(answers_in), MultilingualQuasiExactMatchMetric(answers_in, "prefix")]


def build_config(
    *,
    name: str,
    info: TaskInfo,
    prompt_function: Callable[[dict, str], Doc | None],
    metrics: list,
    evaluation_splits: tuple[str, ...],
    few_shots_split: str | None,
    hf_avail_splits: tuple[str, ...],
    hf_filter: Callable[[dict], bool] | None = None,
    generation_size: int | None = None,
    stop_sequence: tuple[str, ...] | None = None,
    location: tuple[str, str | None] | None = None,
) -> LightevalTaskConfig:
    """A LightevalTaskConfig reading from the hub (pinned) or the local mirror, with its metadata recorded.

    `location` = (hf_repo, hf_revision) replaces `hf_location`'s choice, for a task whose rows must come from the
    same place as another config's (FLORES translation reads its English side by `index_id`).

    Building a config installs the suite's loader into lighteval (`sources.install_lighteval_loader`): a hub source
    published as a parquet branch or a loading script needs more than lighteval's `load_dataset(path, name,
    revision)` (see `finetasks_afr.data.sources`, "Hub forms")."""
    repo, revision = location or hf_location(info.dataset, info.subset)
    install_lighteval_loader()
    TASK_INFO[name] = info
    return LightevalTaskConfig(
        name=name,
        # lighteval declares `-> Doc` but skips a None doc (LightevalTask._get_docs_from_split: `if doc is None`)
        prompt_function=without_empty_instruction(prompt_function),  # type: ignore[arg-type]
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


def required_text(line: dict, field: str) -> str:
    """The cleaned text of `field`; KeyError when missing, ValueError when empty (the row is then skipped)."""
    text = clean(line[field])
    if not text:
        raise ValueError(f"empty {field}")
    return text


def letter_index(letter: Any, n: int) -> int:
    """'A'..'D' (or '1'..'4') -> 0-based index; ValueError when out of range (the row is then skipped)."""
    text = str(letter).strip().upper()
    index = int(text) - 1 if text.isdigit() else "ABCDEFGHIJ".index(text) if len(text) == 1 else -1
    if not 0 <= index < n:
        raise ValueError(f"answer {letter!r} out of range for {n} choices")
    return index


def lettered_row(question: str, choices: list[str], answer: Any) -> dict:
    """The multiple-choice template's input for a row whose gold is named by letter or one-based number
    (`letter_index` over `choices`)."""
    return {"question": question, "choices": choices, "gold_idx": letter_index(answer, len(choices))}


def labelled_row(instruction: str, text: str, labels: tuple[str, ...], label: Any) -> dict:
    """The multiple-choice template's input for a text classified into `labels`: every label offered, in order,
    the gold given by name or index (`label_index`)."""
    return {
        "instruction": instruction,
        "question": text,
        "choices": list(labels),
        "gold_idx": label_index(label, labels),
    }


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
    random_baseline: float
    evaluation_splits: tuple[str, ...]
    few_shots_split: str | None
    hf_avail_splits: tuple[str, ...]
    adapter: Callable[[dict], Any] | None = None  # dataset row -> template input; raises on a bad row
    formulations: tuple[str, ...] = ("cf", "mcf", "hybrid")
    template_kwargs: tuple[tuple[str, Any], ...] = ()
    subset: Callable[[AfricanLanguage], str] | None = None  # default: the language's code for the dataset
    few_shots_split_for: Callable[[AfricanLanguage], str | None] | None = None
    adapter_for: Callable[[AfricanLanguage], Callable[[dict], Any]] | None = None  # per-language adapter
    labels_for: Callable[[AfricanLanguage], tuple[str, ...]] | None = None  # labels offered: baseline 1/len
    extra_metrics: tuple[Metric, ...] = ()  # beside the accuracy family (AfriHate's macro-F1)

    def language_adapter(self, language: AfricanLanguage) -> Callable[[dict], Any]:
        """The adapter for `language`: `adapter_for(language)` when given, else the family's one adapter."""
        if self.adapter_for is not None:
            return self.adapter_for(language)
        if self.adapter is None:
            raise TypeError(f"family {self.benchmark!r} has neither adapter nor adapter_for")
        return self.adapter


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
                    skipping(name, family.language_adapter(language)),
                    formulation=FORMULATIONS[formulation],
                    **dict(family.template_kwargs),
                )
                labels = len(family.labels_for(language)) if family.labels_for else None
                info = TaskInfo(
                    benchmark=family.benchmark,
                    language=language.iso3,
                    category=family.category,
                    formulation=FORMULATION_LABEL[formulation],
                    random_baseline=1 / labels if labels else family.random_baseline,
                    prompt=prompt,
                    dataset=family.dataset,
                    subset=subset,
                )
                configs.append(
                    build_config(
                        name=name,
                        info=info,
                        prompt_function=prompt_function,
                        metrics=[*mc_metrics(FORMULATIONS[formulation]), *family.extra_metrics],
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
    answer_language: Callable[[AfricanLanguage], Language] = content_language,
) -> list[LightevalTaskConfig]:
    """QA-style generative tasks (lighteval's QA template), scored with F1 and prefix exact match under the
    normaliser of the language the gold answers are written in (`answer_language`; default the task's own)."""
    from lighteval.tasks.templates.qa import get_qa_prompt_function

    configs = []
    for language in languages:
        subset = language.codes[dataset]
        for prompt in prompts_for(language):
            name = task_name(benchmark, language.iso3, None, prompt)
            info = TaskInfo(
                benchmark=benchmark,
                language=language.iso3,
                category=category,
                formulation="GEN",
                random_baseline=0.0,
                prompt=prompt,
                dataset=dataset,
                subset=subset,
            )
            configs.append(
                build_config(
                    name=name,
                    info=info,
                    prompt_function=get_qa_prompt_function(words_language(language, prompt), skipping(name, adapter)),
                    metrics=gen_metrics(answer_language(language)),
                    evaluation_splits=evaluation_splits,
                    few_shots_split=few_shots_split(language),
                    hf_avail_splits=hf_avail_splits,
                    generation_size=generation_size,
                    stop_sequence=("\n",),
                )
            )
    return configs


CHOICE_FORMULATIONS = ("CF", "MCF", "HYBRID")
"""Formulations whose accuracy is the share of documents where the model picks the gold choice: a model giving one
answer (one choice position) to every document scores the majority answer's share (`majority_share`)."""


def majority_share(docs: list[Doc]) -> float | None:
    """The share of `docs` whose gold includes the most common gold choice index: the accuracy of the best
    constant answer, at least 1/k only on balanced gold. None without documents or gold indices."""
    counts: Counter[int] = Counter()
    for doc in docs:
        gold = doc.gold_index
        golds = {gold} if isinstance(gold, int) else set(gold or ())
        counts.update(golds)
    if not docs or not counts:
        return None
    return counts.most_common(1)[0][1] / len(docs)

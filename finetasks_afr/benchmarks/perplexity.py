"""Perplexity of held-out FLORES-200 text, per language (formulation PPL): a signal that needs no prompt words.

- `flores_ppl_<iso3>`: the SIB-200 test sentences (field `text`; 204 FLORES-200 sentences per language, all
  distinct), every language SIB-200 covers.
- `belebele_ppl_<iso3>`: the Belebele passages (field `flores_passage`), each passage ONCE: Belebele asks one or
  two questions per passage (900 rows, 488 passages), and the first row of each passage in dataset order is kept
  (`FirstRowPerPassage`). Every language Belebele covers.

Both are FLORES-200 text (Belebele passages are built from FLORES sentences, so the two overlap in content but
not in unit: sentences vs. paragraphs). Each document is the whitespace-normalised text (`clean`); rows without
text are skipped and counted. Metrics: lighteval's `word_perplexity`, `byte_perplexity`, `bits_per_byte` (all
lower is better). The words and bytes they count are those of `Doc.query`, which is exactly the text scored:
`len(re.split(r"\\s+", text))` is the number of words of a cleaned text (single spaces, trimmed), and
`original_query` is left unset. Scored by `loglikelihood_rolling`, which is broken in lighteval 0.13 and fixed by
`finetasks_afr.scoring.compat` (bug 3: each token scored once, the first conditioned on BOS, else EOS).

0-shot only: few-shot examples would be scored with the text but not counted by the metrics, and the documents
have no gold for lighteval's sampler (which dies with a TypeError on them). Every task is marked so where it is
defined (`compat.limit_fewshot(config, 0, ...)`, in `_config`): the sweep's task check and lighteval's own task
building (compat fix 5) then refuse `task|k` with k > 0 by name, before any model loads.

Task metadata:
- category GEN: the model is scored as a generator of the language's text, with no choices and no prompt words;
  of the categories the analysis knows (GK, RC, RES, NLU, GEN) this is the only one that does not claim a skill
  the text does not test (reading a passage is not answering questions about it).
- random_baseline NaN here: the chance level is the metric's, not the task's. The score table gives
  bits_per_byte 8 and byte_perplexity 256 (a model uniform over the 256 byte values, the same for every model and
  tokenizer; `analysis.scores.metrics.chance_levels`) and leaves word_perplexity empty. A model uniform over its
  vocabulary V would score log2(V) x tokens / bytes, which depends on the tokenizer's compression of this very
  text: it would put runs with different tokenizers on different scales (docs/statistics.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from lighteval.metrics.metrics import Metrics
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc

from finetasks_afr.benchmarks.common import TaskInfo, build_config, required_text, skipping, task_name
from finetasks_afr.prompts.languages import AfricanLanguage, covered_by
from finetasks_afr.scoring import compat

FORMULATION = "PPL"
CATEGORY = "GEN"
NO_RANDOM_BASELINE = math.nan
METRICS = (Metrics.word_perplexity, Metrics.byte_perplexity, Metrics.bits_per_byte)
METRIC_NAMES = ("word_perplexity", "byte_perplexity", "bits_per_byte")
ZERO_SHOT_REASON = (
    "a perplexity task scores each text alone: its documents have no answer to show as an example, and the "
    "perplexity metrics would count the words and bytes of the text but score the examples too"
)


def text_of(field: str) -> Callable[[dict], str]:
    """Row -> its cleaned text in `field`; ValueError when missing or empty (the row is then skipped)."""

    return lambda line: required_text(line, field)


def text_doc(text: str, task_name: str) -> Doc:
    """A perplexity document as lighteval's own (wikitext) builds it: the text is the query, no choices."""
    return Doc(task_name=task_name, query=text, choices=None, gold_index=None)  # type: ignore[arg-type]


def text_prompt(name: str, field: str) -> Callable[[dict, str], Doc | None]:
    """Prompt function of a task scoring every row's text."""
    text = skipping(name, text_of(field))

    def prompt(line: dict, task_name: str) -> Doc | None:
        value = text(line)
        return None if value is None else text_doc(value, task_name)

    return prompt


class FirstRowPerPassage:
    """Prompt function keeping only the first row (in dataset order) of each distinct cleaned passage.

    lighteval formats a split by calling the prompt function on every row in order, with the row's position in
    `line["__index"]`; a row is kept iff it is the first seen with its passage. The memory is cleared when a pass
    restarts at row 0, and a repeated pass over the same rows keeps the same rows, so the result does not depend
    on how often the split is formatted. A row without `__index` is an error: deduplication needs the order.
    """

    def __init__(self, name: str, field: str) -> None:
        self.name = name
        self._text = skipping(name, text_of(field))
        self._first: dict[str, int] = {}

    def __call__(self, line: dict, task_name: str) -> Doc | None:
        index = line.get("__index")
        if not isinstance(index, int):
            raise ValueError(
                f"{self.name}: row has no integer '__index' (lighteval sets it while formatting a split in order); "
                "fix: format the rows through LightevalTask, or pass '__index' = the row's position in the split"
            )
        if index == 0:
            self._first.clear()
        text = self._text(line)
        if text is None:
            return None
        if self._first.setdefault(text, index) != index:
            return None  # a later question on a passage already kept
        return text_doc(text, task_name)


def _config(
    benchmark: str,
    dataset: str,
    language: AfricanLanguage,
    prompt_function: Callable[[str], Callable[[dict, str], Doc | None]],
    splits: tuple[str, ...],
) -> LightevalTaskConfig:
    """One task: `<benchmark>_<iso3>`, 0-shot only (marked) on the test split, metadata in TASK_INFO."""
    name = task_name(benchmark, language.iso3, None, "native")
    subset = language.codes[dataset]
    info = TaskInfo(benchmark, language.iso3, CATEGORY, FORMULATION, NO_RANDOM_BASELINE, "native", dataset, subset)
    config = build_config(
        name=name,
        info=info,
        prompt_function=prompt_function(name),
        metrics=list(METRICS),
        evaluation_splits=("test",),
        few_shots_split=None,
        hf_avail_splits=splits,
    )
    return compat.limit_fewshot(config, 0, ZERO_SHOT_REASON)


def flores_tasks() -> list[LightevalTaskConfig]:
    """`flores_ppl_<iso3>`: SIB-200's FLORES test sentences, every language SIB-200 covers."""
    return [
        _config(
            "flores_ppl", "sib200", language, lambda name: text_prompt(name, "text"), ("train", "validation", "test")
        )
        for language in covered_by("sib200")
    ]


def belebele_tasks() -> list[LightevalTaskConfig]:
    """`belebele_ppl_<iso3>`: Belebele's passages, each once, every language Belebele covers."""
    return [
        _config(
            "belebele_ppl", "belebele", language, lambda name: FirstRowPerPassage(name, "flores_passage"), ("test",)
        )
        for language in covered_by("belebele")
    ]


def tasks() -> list[LightevalTaskConfig]:
    return flores_tasks() + belebele_tasks()

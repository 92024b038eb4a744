"""AfriHate: hate speech / abusive language / normal tweets in 15 African languages (NLU), accuracy and macro-F1.

The prompt names the task and the three labels (as lm-evaluation-harness's removed afrihate templates and
AfroBench's API prompts do), in English in both prompt variants. The classes are imbalanced (most tweets are
normal), so a model that always answers "normal" scores a high accuracy: macro-F1 (`f1_macro`) is reported beside
it, as the AfriHate shared task reports it.

`f1_macro` is lighteval's own corpus-level F1 (`CorpusLevelF1Score(average="macro")`, scikit-learn's macro F1 over
the classes present in gold or prediction) of the highest-log-likelihood choice, with lighteval's
`LoglikelihoodPreparator`; lighteval bootstraps its standard error (`f1_macro_stderr`). lighteval's ready-made
`loglikelihood_f1` is not used: it is `average=None` reduced with `max`, i.e. the F1 of the best class, not
macro-F1. Under CF and hybrid the prediction is the raw-log-likelihood argmax (acc's prediction, not acc_norm's).

Labels are the strings `Hate`, `Abuse`, `Normal` (read case-insensitively); an integer label is refused (the row
is skipped and counted) because no citable source gives the order an integer encoding would use. The AfriHate
shared task's own release names the classes `Hate`, `Offensive`, `Normal`: its `Offensive` is the hub's `Abuse`
(the same class under the shared task's name, :data:`LABEL_ALIASES`), so its rows are read as abuse rather than
skipped, and the prompt offers the same three labels whichever release the rows come from.
"""

from __future__ import annotations

from lighteval.metrics.metrics_corpus import CorpusLevelF1Score
from lighteval.metrics.sample_preparator import LoglikelihoodPreparator
from lighteval.metrics.utils.metric_utils import CorpusLevelMetric
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import SamplingMethod
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, family_tasks, labelled_row, required_text
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import covered_by, same_codes

LABELS = ("hate", "abuse", "normal")  # lm-evaluation-harness's doc_to_choice order (Hate, Abuse, Normal)
INSTRUCTION = "Classify the tweet as hate speech, abusive language or normal, as one of: " + ", ".join(LABELS) + "."
LABEL_ALIASES = {"offensive": "abuse"}  # the shared-task release's name for the hub's Abuse class
F1_MACRO_NAME = "f1_macro"

F1_MACRO = CorpusLevelMetric(
    metric_name=F1_MACRO_NAME,
    sample_level_fn=LoglikelihoodPreparator(is_single_token=True),  # one gold per document: golds as ints
    category=SamplingMethod.LOGPROBS,
    corpus_level_fn=CorpusLevelF1Score(average="macro"),
    higher_is_better=True,
)
"""Macro-F1 of the argmax choice over the corpus (its stderr is lighteval's bootstrap)."""

SOURCES = (
    DatasetSource(
        key="afrihate",
        hub_repo="Davlan/afrihate",
        revision=None,
        splits=("train", "validation", "test"),
        codes=same_codes("amh arq ary hau ibo kin orm pcm som swa tir twi xho yor zul"),
        notes="Unpinned: no full commit of Davlan/afrihate main was seen offline (main d7a63f6, short id only; "
        "refs/convert/parquet 9491c69eef936df8a6f99df9353ff4a5dc37290f is the converter's branch, not the data "
        "as published). Davlan/afrihate is the copy AfroBench's API prompts read; the canonical repository is "
        "afrihate/afrihate (lm-eval's removed templates, mteb's copy). Fields `tweet`, `label` (Hate/Abuse/"
        "Normal) and configs = ISO 639-3 codes per those sources; the shared-task release's Hate/Offensive/Normal "
        "is read with Offensive as Abuse. Splits train/validation/test, few-shot from train. Licence: apache-2.0 "
        "on the Davlan card, cc-by-4.0 in mteb's copy.",
        text_field=("tweet", "test"),
    ),
)


def adapter(line: dict) -> dict:
    label = line["label"]
    if not isinstance(label, str) or label.strip().isdigit():
        raise ValueError(f"AfriHate label {label!r} is not one of the names Hate/Abuse/Normal (or Offensive)")
    name = label.strip().lower()
    return labelled_row(INSTRUCTION, required_text(line, "tweet"), LABELS, LABEL_ALIASES.get(name, name))


FAMILY = Family(
    benchmark="afrihate",
    dataset="afrihate",
    category="NLU",
    template=get_mcq_prompt_function,
    adapter=adapter,
    random_baseline=1 / len(LABELS),
    evaluation_splits=("test",),
    few_shots_split="train",
    hf_avail_splits=("train", "validation", "test"),
    extra_metrics=(F1_MACRO,),
)


def tasks() -> list[LightevalTaskConfig]:
    return family_tasks(FAMILY, covered_by("afrihate"))

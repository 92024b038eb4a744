"""The human-translated sets of "Bridging the Gap" (af am bm ig nso sn st tn ts xh zu, and English as `eng`):
Winogrande (RES) and the MMLU clinical subjects clinical_knowledge, college_medicine, virology (GK).

Winogrande CF is partial scoring (Trinh & Le 2018; lm-evaluation-harness `winogrande`): the option fills the
blank and the model scores only the rest of the sentence, log P(rest | sentence before the blank + option), with
one context per option (`finetasks_afr.partial_scoring`, which `finetasks_afr/tasks.py` applies). Its metrics are
acc, acc_norm and acc_norm_token: PMI is meaningless when every option scores the same continuation. A sentence
with the blank first is scored too (context = the option alone); one with nothing after the blank is skipped.
Winogrande MCF: the sentence with its blank as the question and the two options as lettered choices.
MMLU takes its 5 few-shot examples from the dev split.
"""

from __future__ import annotations

import dataclasses

from lighteval.metrics.dynamic_metrics import LogLikelihoodAccMetric
from lighteval.metrics.normalizations import LogProbCharNorm, LogProbTokenNorm
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, clean, family_tasks, letter_index
from finetasks_afr.languages import covered_by
from finetasks_afr.partial_scoring import get_partial_scoring_prompt_function

SUBJECTS = ("clinical_knowledge", "college_medicine", "virology")


def winogrande_mcq_adapter(line: dict) -> dict:
    """MCF: the sentence with its blank is the question and the two options are lettered choices, so blank-first
    sentences (7% of Amharic) and blanks attached to a prefix (Zulu "u_") render as written."""
    sentence = clean(line["Sentence"])
    if sentence.count("_") != 1:
        raise ValueError("the sentence must hold exactly one blank")
    options = [clean(line["Option1"]), clean(line["Option2"])]
    if not all(options):
        raise ValueError("empty option")
    return {"question": sentence, "choices": options, "gold_idx": letter_index(line["Answer"], 2)}


def winogrande_partial_adapter(line: dict) -> dict:
    """CF, partial scoring: context i = text before the blank + option i (joined as written, so "u_" gives
    "uNatalie"); continuation = the text after the blank. The blank may come first, not last."""
    sentence = clean(line["Sentence"])
    if sentence.count("_") != 1:
        raise ValueError("the sentence must hold exactly one blank")
    before, after = sentence.split("_")
    rest = after.strip()
    if not rest:
        raise ValueError("nothing after the blank: no continuation to score")
    options = [clean(line["Option1"]), clean(line["Option2"])]
    if not all(options):
        raise ValueError("empty option")
    return {
        "contexts": [clean(before + option) for option in options],
        "continuation": rest,
        "gold_idx": letter_index(line["Answer"], 2),
    }


def mmlu_adapter(line: dict) -> dict:
    choices = [clean(line[f"Option{letter}"]) for letter in "ABCD"]
    return {"question": clean(line["Question"]), "choices": choices, "gold_idx": letter_index(line["Answer"], 4)}


WINOGRANDE = Family(
    benchmark="winogrande_afr",
    dataset="winogrande_afr",
    category="RES",
    template=get_mcq_prompt_function,
    adapter=winogrande_mcq_adapter,
    random_baseline=0.5,
    evaluation_splits=("test",),
    few_shots_split="dev",
    hf_avail_splits=("train_s", "dev", "test"),
    formulations=("mcf",),
)
WINOGRANDE_CF = dataclasses.replace(
    WINOGRANDE,
    template=get_partial_scoring_prompt_function,
    adapter=winogrande_partial_adapter,
    formulations=("cf",),
    template_kwargs=(("fix_formatting", False),),  # keep the sentence as written: no re-capitalised names
)


def winogrande_cf_metrics() -> list:
    """acc, acc_norm (characters), acc_norm_token; no acc_norm_pmi (the continuation is shared)."""
    return [
        LogLikelihoodAccMetric(normalization=None),
        LogLikelihoodAccMetric(normalization=LogProbCharNorm()),
        LogLikelihoodAccMetric(normalization=LogProbTokenNorm()),
    ]


def winogrande_tasks(languages) -> list[LightevalTaskConfig]:
    """Per language: CF (partial scoring, its own metrics) then MCF, in both prompt languages."""
    configs = []
    for language in languages:
        configs += [
            dataclasses.replace(config, metrics=winogrande_cf_metrics())
            for config in family_tasks(WINOGRANDE_CF, [language])
        ]
        configs += family_tasks(WINOGRANDE, [language])
    return configs


def mmlu_family(subject: str) -> Family:
    return Family(
        benchmark=f"mmlu_afr_{subject}",
        dataset="mmlu_clinical_afr",
        category="GK",
        template=get_mcq_prompt_function,
        adapter=mmlu_adapter,
        random_baseline=0.25,
        evaluation_splits=("test",),
        few_shots_split="dev",
        hf_avail_splits=("dev", "val", "test"),
        subset=lambda language, subject=subject: f"{subject}_{language.codes['mmlu_clinical_afr']}",
    )


def tasks() -> list[LightevalTaskConfig]:
    configs = winogrande_tasks(covered_by("winogrande_afr"))
    for subject in SUBJECTS:
        configs += family_tasks(mmlu_family(subject), covered_by("mmlu_clinical_afr"))
    return configs

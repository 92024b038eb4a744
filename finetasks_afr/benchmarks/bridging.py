"""The human-translated sets of "Bridging the Gap" (af am bm ig nso sn st tn ts xh zu, and English as `eng`):
Winogrande (RES) and the MMLU clinical subjects clinical_knowledge, college_medicine, virology (GK).

Winogrande CF follows lighteval's xwinograd: the sentence up to the blank is the context and each option
followed by the rest of the sentence is a continuation (both option and remainder are scored; see the README
for why this is not partial scoring). MMLU takes its 5 few-shot examples from the dev split.
"""

from __future__ import annotations

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.continuation import get_continuation_prompt_function
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, clean, family_tasks, letter_index
from finetasks_afr.languages import covered_by

SUBJECTS = ("clinical_knowledge", "college_medicine", "virology")


def winogrande_adapter(line: dict) -> dict:
    sentence = clean(line["Sentence"])
    if sentence.count("_") != 1:
        raise ValueError("the sentence must hold exactly one blank")
    before, after = sentence.split("_")
    if not before.strip():
        raise ValueError("nothing before the blank")
    options = [clean(line["Option1"]), clean(line["Option2"])]
    return {
        "context": before.strip(),
        "continuations": [clean(f"{option} {after}") for option in options],
        "gold_idx": letter_index(line["Answer"], 2),
    }


def mmlu_adapter(line: dict) -> dict:
    choices = [clean(line[f"Option{letter}"]) for letter in "ABCD"]
    return {"question": clean(line["Question"]), "choices": choices, "gold_idx": letter_index(line["Answer"], 4)}


WINOGRANDE = Family(
    benchmark="winogrande_afr",
    dataset="winogrande_afr",
    category="RES",
    template=get_continuation_prompt_function,
    adapter=winogrande_adapter,
    random_baseline=0.5,
    evaluation_splits=("test",),
    few_shots_split="dev",
    hf_avail_splits=("train_s", "dev", "test"),
    formulations=("cf", "mcf"),
    template_kwargs=(("fix_formatting", False),),  # keep the sentence as written: no re-capitalised names
)


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
    configs = family_tasks(WINOGRANDE, covered_by("winogrande_afr"))
    for subject in SUBJECTS:
        configs += family_tasks(mmlu_family(subject), covered_by("mmlu_clinical_afr"))
    return configs

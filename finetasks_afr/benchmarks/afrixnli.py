"""AfriXNLI (IrokoBench): 3-way natural language inference, all three relations kept (NLU)."""

from __future__ import annotations

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.nli import get_nli_prompt_function

from finetasks_afr.benchmarks.common import Family, clean, family_tasks, label_index
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import IROKOBENCH, covered_by, same_codes

SOURCES = (
    DatasetSource(
        key="afrixnli",
        hub_repo="masakhane/afrixnli",
        revision=None,
        splits=("validation", "test"),
        codes=same_codes(IROKOBENCH),
        excluded={"fra": "French: not African and not the English reference"},
        notes="Unpinned. label is int (0 entailment, 1 neutral, 2 contradiction). No raw source: hub only.",
    ),
)

LABELS = ("entailment", "neutral", "contradiction")  # dataset order: 0, 1, 2


def adapter(line: dict) -> dict:
    return {
        "premise": clean(line["premise"]),
        "hypothesis": clean(line["hypothesis"]),
        "gold_idx": label_index(line["label"], LABELS),
    }


FAMILY = Family(
    benchmark="afrixnli",
    dataset="afrixnli",
    category="NLU",
    template=get_nli_prompt_function,
    adapter=adapter,
    random_baseline=1 / 3,
    evaluation_splits=("test",),
    few_shots_split="validation",
    hf_avail_splits=("validation", "test"),
    template_kwargs=(("relations", list(LABELS)),),
)


def tasks() -> list[LightevalTaskConfig]:
    return family_tasks(FAMILY, covered_by("afrixnli"))

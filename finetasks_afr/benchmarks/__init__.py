"""One module per benchmark family; `all_tasks()` gathers their LightevalTaskConfigs."""

from __future__ import annotations

from lighteval.tasks.lighteval_task import LightevalTaskConfig


def all_tasks() -> list[LightevalTaskConfig]:
    """Every task of the suite (call after finetasks_afr.literals.register_literals())."""
    from finetasks_afr.benchmarks import (
        afrimgsm,
        afrimmlu,
        afriqa,
        afrisenti,
        afrixnli,
        belebele,
        bridging,
        longppl,
        masakhanews,
        naijarc,
        perplexity,
        sib200,
        uhura,
    )

    modules = (
        afrimmlu, afrixnli, afrimgsm, belebele, bridging, sib200, masakhanews, afrisenti, afriqa, naijarc, uhura,
        perplexity, longppl,
    )  # fmt: skip
    return [config for module in modules for config in module.tasks()]

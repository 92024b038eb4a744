"""Few-shot leaks and answer patterns on real rows: stock lighteval 0.13 sampler vs finetasks_afr.prompts.fewshot.

    make mirror   # or: finetasks-afr data import-raw ../shared/data --out out/mirror
    FINETASKS_AFR_DATA_DIR=out/mirror HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 \
        .venv/bin/python bench/fewshot_leaks.py belebele_zul_mcf sib200_yor_mcf afrisenti_orm_mcf_enprompt

For each task, 5-shot over every test document: how many documents are shown their own text among their
examples, and how many distinct sequences of example answers there are (1 = one pattern for every document).
"""

from __future__ import annotations

import dataclasses
import sys

import finetasks_afr.tasks  # noqa: F401  (applies the fixes, registers the prompt words)
from finetasks_afr.benchmarks import all_tasks
from finetasks_afr.prompts import fewshot


def _normalised(text: str) -> str:
    return " ".join(text.split())


def main(names: list[str]) -> None:
    from lighteval.tasks.lighteval_task import LightevalTask

    configs = {config.name: config for config in all_tasks()}
    for name in names:
        for mode in ("stock", "fixed"):
            if mode == "stock":
                fewshot.restore()
            else:
                fewshot.apply()
            docs = LightevalTask(dataclasses.replace(configs[name], num_fewshots=5)).get_docs()
            leaks = sum(
                _normalised(doc.query) in {_normalised(example.query) for example in doc.fewshot_samples}
                for doc in docs
            )
            patterns = len({tuple(example.get_golds()[0] for example in doc.fewshot_samples) for doc in docs})
            print(f"{name}|5 {mode}: {len(docs)} docs, {leaks} shown themselves, {patterns} answer sequences")


if __name__ == "__main__":
    main(sys.argv[1:])

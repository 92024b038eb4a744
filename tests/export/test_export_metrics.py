"""The metric entries and group aggregates `finetasks-afr export lm-eval` writes are ones lm-eval 0.4.13 loads and
runs: every metric kind the export can write names an aggregation lm-eval registers (a metric's own name, such as
`byte_perplexity`, is none: lm-eval then fails in `_compute_task_aggregations`), and a group names the filter each
metric is reported under (without one, lm-eval 0.4.12+ aggregates every filter of its children). Fast: no suite
import, no documents; the registry of the real lm-eval is read where its side environment is built."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from finetasks_afr.export.lm_eval import (
    GENERATIVE_METRICS,
    NEAREST,
    PERPLEXITY_METRICS,
    ExportedTask,
    _group_yaml,
    _metric_entry,
)

LM_EVAL_0_4_13_AGGREGATIONS = frozenset({"bypass", "nanmean", "mean", "median", "perplexity", "weighted_perplexity",
                                         "bits_per_byte", "f1", "matthews_corrcoef", "bleu", "chrf", "chrf++", "ter",
                                         "brier_score"})  # fmt: skip
"""`register_aggregation` in lm_eval/api/metrics.py of lm-eval 0.4.13."""
LM_EVAL_VENV = Path(__file__).resolve().parents[2] / ".venv-lmeval"
EXPORTED_KINDS = sorted({*PERPLEXITY_METRICS, *NEAREST.values(), "acc", "acc_norm", "exact_match"})
"""Every metric kind whose metric entry names a built-in aggregation (utils.py's generative and per-choice metrics
name a `!function` of the folder instead)."""


def _aggregation_of(entry: str) -> str:
    return yaml.safe_load(entry)[0]["aggregation"]


@pytest.mark.parametrize("metric", EXPORTED_KINDS)
def test_every_exported_metric_names_an_aggregation_lm_eval_registers(metric: str) -> None:
    assert _aggregation_of(_metric_entry(metric)) in LM_EVAL_0_4_13_AGGREGATIONS


def test_perplexities_aggregate_as_lm_eval_registers_them() -> None:
    """lm-eval's own `register_metric` entries: both perplexities are weighted perplexities, bits per byte its own."""
    from finetasks_afr.export.lm_eval import metric_aggregation

    assert {m: metric_aggregation(m) for m in PERPLEXITY_METRICS} == {
        "bits_per_byte": "bits_per_byte",
        "byte_perplexity": "weighted_perplexity",
        "word_perplexity": "weighted_perplexity",
    }
    assert "chrf++" in GENERATIVE_METRICS  # written as utils.chrf_plus_plus, not a registered name


@pytest.mark.slow
@pytest.mark.skipif(not (LM_EVAL_VENV / "bin" / "python").exists(), reason="no .venv-lmeval (scripts/lmeval_env.sh)")
def test_the_table_is_the_real_lm_eval_registry() -> None:
    """The real lm-eval 0.4.13 (its side environment): each perplexity's registered aggregation is `AGGREGATIONS`'s,
    and every aggregation the export names is registered."""
    code = (  # METRIC_AGGREGATION_REGISTRY holds the functions: named back through AGGREGATION_REGISTRY
        "import json, lm_eval.api.metrics\n"
        "from lm_eval.api import registry as r\n"
        "names = sorted(r.AGGREGATION_REGISTRY)\n"
        "print(json.dumps({'aggregations': names, 'metrics': {m: next((n for n in names if r.get_aggregation(n) is"
        f" r.get_metric_aggregation(m)), None) for m in {list(PERPLEXITY_METRICS)!r}}}}}))"
    )
    done = subprocess.run([str(LM_EVAL_VENV / "bin" / "python"), "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)  # fmt: skip
    registry = json.loads(done.stdout.strip().splitlines()[-1])
    from finetasks_afr.export.lm_eval import AGGREGATIONS

    assert registry["metrics"] == AGGREGATIONS
    assert {_aggregation_of(_metric_entry(m)) for m in EXPORTED_KINDS} <= set(registry["aggregations"])


def test_a_group_names_each_metric_with_the_filter_it_is_reported_under() -> None:
    """A kept AfroBench afrimgsm task is read on exact_match under flexible-extract (`collect`'s
    FILTER_PREFERENCE): its group aggregates that (metric, filter), this suite's tasks under `none`."""
    from finetasks_afr.export.lm_eval import LM_EVAL_FILTERS

    afrimgsm = ExportedTask("afrimgsm_swa_prompt_1", "swa", "MATH", ["exact_match"], "exact_match",
                            filter=LM_EVAL_FILTERS["afrimgsm"])  # fmt: skip
    sib = ExportedTask("sib200_swa_cf", "swa", "NLU", ["acc", "acc_norm"], "acc", rows=[{}])
    group = yaml.safe_load(_group_yaml("finetasks_afr_swa", ["a", "b"], [afrimgsm, sib]))
    assert [(e["metric"], e["filter_list"]) for e in group["aggregate_metric_list"]] == [
        ("exact_match", ["flexible-extract"]),
        ("acc", ["none"]),
        ("acc_norm", ["none"]),
    ]

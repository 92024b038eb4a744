"""Signal statistics on the real Pythia checkpoint evaluations (the numbers quoted in the README).

Usage: python scripts/pythia_signal.py [PYTHIA_V1_DIR]   (default ../shared/data/pythia/evals/pythia-v1)
The 8 deduplicated Pythia models (70M..12B) are the "runs"; zero-shot results; 2,097,152 tokens per step.
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

from analysis.config import Config, SNRConfig
from analysis.scores.harness_json import read_lm_eval_harness
from analysis.signal import compute_signal, series_monotonicity

MODELS = [f"pythia-{size}-deduped" for size in ("70m", "160m", "410m", "1b", "1.4b", "2.8b", "6.9b", "12b")]
CONFIG = Config(snr=SNRConfig(fallback="checkpoint", checkpoint_last_n=5))


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("../shared/data/pythia/evals/pythia-v1")
    table, report = read_lm_eval_harness([root / m / "zero-shot" for m in MODELS], tokens_per_step=2_097_152)
    print(report.summary())
    signal = compute_signal(table, CONFIG, with_ci=False).filter(pl.col("metric") != "ppl")
    cols = ["task", "metric", "monotonicity", "consistency", "non_random_sigmas", "snr_checkpoint"]
    with pl.Config(tbl_rows=40, tbl_cols=10, tbl_width_chars=140, float_precision=2):
        print("\nNon-MMLU tasks (acc):")
        print(signal.filter(~pl.col("task").str.starts_with("hendrycksTest") & (pl.col("metric") == "acc"))[cols])
        mmlu = signal.filter(pl.col("task").str.starts_with("hendrycksTest") & (pl.col("metric") == "acc"))
        non_monotone = mmlu.filter(pl.col("monotonicity") < 0.5).sort("monotonicity")
        print(f"\nMMLU subjects (acc): {non_monotone.height} of {mmlu.height} have monotonicity < 0.5")
        print("most monotone MMLU subjects:")
        print(mmlu.sort("monotonicity", descending=True).head(5)[cols])
        print("least monotone MMLU subjects:")
        print(non_monotone.head(5)[cols])
        per_model = series_monotonicity(table, CONFIG).filter(
            pl.col("task").str.starts_with("hendrycksTest") & (pl.col("metric") == "acc")
        )
        print("\nMMLU subjects with rho >= 0.5, per model:")
        print(
            per_model.group_by("run")
            .agg((pl.col("rho") >= 0.5).sum().alias("monotone_subjects"), pl.col("rho").mean().alias("mean_rho"))
            .sort("mean_rho")
        )


if __name__ == "__main__":
    main()

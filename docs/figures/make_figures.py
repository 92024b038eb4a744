"""Regenerate the README's demo figures from the bundled demo sweep (`make figures`).

    .venv/bin/python docs/figures/make_figures.py [--scores TABLE] [--out docs/figures]

The figures are drawn by the analysis's own plotting (`analysis.explore.readme_figures`): the training
curves of the best kept task and of the most clearly dropped task of the same language and formulation,
that language's criteria overview and the ordering consistency of its tasks. The PNGs are byte-reproducible;
tests/analysis/test_explore.py checks that the committed ones match what this script draws.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from analysis.explore import readme_figures
from finetasks_afr.data.bundled import BUNDLED_SWEEP, config_for


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scores", type=Path, default=None, help="score table (default: the bundled demo sweep)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent, help="output folder")
    args = parser.parse_args()
    for path in readme_figures(args.out, args.scores or BUNDLED_SWEEP, config_for(args.scores, None)):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""The round-2 pilot's design and fit (issue 38): mixes that change only the pilot languages' share, and the dose
response against a hand-computed case and numpy's independent least squares."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from finetasks_afr.study.corpus import block_counts
from finetasks_afr.study.design import CONTROL, DESIGNED_ORDER, FILLER_FILES, HIGH, LOW, MIDDLE, MIXES
from finetasks_afr.study.pilot import (
    PILOT_LANGUAGES,
    PILOT_SHARES,
    DoseResponse,
    fit_dose_response,
    pilot_mix,
    pilot_sizes,
)

PILOT_RESULTS = Path(__file__).resolve().parents[2] / "docs" / "study" / "pilot.json"


@pytest.mark.parametrize("share", PILOT_SHARES)
def test_a_pilot_mix_changes_only_the_pilot_languages_share(share: float) -> None:
    mix = pilot_mix(share)
    assert sum(Fraction(str(value)) for value in mix.values()) == 1  # as corpus.block_counts demands
    assert block_counts(mix, 9600)[CONTROL] == 960
    assert all(mix[language] == share for language in PILOT_LANGUAGES) and mix[CONTROL] == 0.10
    assert [mix[language] for language in FILLER_FILES] == [pytest.approx((0.9 - 2 * share) / 2)] * 2
    with pytest.raises(ValueError, match="no room for the control"):
        pilot_mix(0.46)


def test_pilot_sizes_decay_the_learning_rate_and_keep_the_last_checkpoint_only() -> None:
    sizes = pilot_sizes()
    assert sizes.lr_scheduler == "cosine_with_min_lr" and sizes.steps == 200 and sizes.save_every == 200
    assert sizes.seeds == (1, 2)


def test_the_dose_response_fit_by_hand_and_by_numpy() -> None:
    # two seeds at shares 1/8, 1/4, 1/2: log2 -3, -2, -1; means 3.0, 2.9, 2.8 (slope -0.1 per doubling); each pair
    # is its mean +- 0.01, so the pooled seed sd is sqrt(3 x 2 x 0.01^2 / 3) = 0.01 x sqrt(2)
    points = [(0.125, 1, 3.01), (0.125, 2, 2.99), (0.25, 1, 2.91), (0.25, 2, 2.89), (0.5, 1, 2.81), (0.5, 2, 2.79)]
    fit = fit_dose_response("zul", points)
    assert fit.slope == pytest.approx(-0.1) and fit.intercept == pytest.approx(2.7)
    assert fit.seed_sd == pytest.approx(0.01 * math.sqrt(2))
    # seed 1 is 0.02 above seed 2 at every share and the means lie on the line: the seed offset is fitted away and
    # nothing is left for a seed-paired comparison
    assert fit.paired_sd == pytest.approx(0.0, abs=1e-12)
    slope, intercept = np.polyfit([math.log2(s) for s, _, _ in points], [b for _, _, b in points], 1)
    assert (fit.slope, fit.intercept) == (pytest.approx(slope), pytest.approx(intercept))
    # 2.25x apart: -0.1 x log2(2.25) = -0.117
    assert fit.contrast(2.25) == pytest.approx(-0.1 * math.log2(2.25))
    shifted = [(s, seed, b + (0.03 if (s, seed) == (0.25, 1) else 0.0)) for s, seed, b in points]
    noisy = fit_dose_response("zul", shifted)
    # independently: every share has both seeds, so fitting a seed offset is demeaning within each seed; the slope
    # is then scipy's line through the demeaned points, and the residual has 6 - 3 degrees of freedom
    x = {seed: [math.log2(s) for s, k, _ in shifted if k == seed] for seed in (1, 2)}
    y = {seed: [b for _, k, b in shifted if k == seed] for seed in (1, 2)}
    dx = [v - np.mean(x[k]) for k in (1, 2) for v in x[k]]
    dy = [v - np.mean(y[k]) for k in (1, 2) for v in y[k]]
    line = stats.linregress(dx, dy)
    residual = np.array(dy) - line.slope * np.array(dx)
    assert noisy.paired_sd == pytest.approx(math.sqrt(float(residual @ residual) / 3)) and noisy.paired_sd > 0
    assert noisy.twice_stderr() == pytest.approx(2 * noisy.paired_sd * math.sqrt(2 / 3))
    assert noisy.resolvable(2.25) and not noisy.resolvable(1.01)
    with pytest.raises(ValueError, match="at least two shares"):
        fit_dose_response("zul", points[:2])


def test_the_design_moves_every_studied_language_through_three_levels_at_least_2_25x_apart() -> None:
    for language, order in DESIGNED_ORDER.items():
        assert [MIXES[mix][language] for mix in order] == [HIGH, MIDDLE, LOW], language
    assert MIDDLE / LOW >= 2.25 and HIGH / MIDDLE >= 2.25
    for mix, shares in MIXES.items():
        assert shares[CONTROL] == 0.10, mix
        assert sum(Fraction(str(value)) for value in shares.values()) == 1, mix
        assert set(shares) - set(DESIGNED_ORDER) - {CONTROL} <= set(FILLER_FILES), mix


def test_the_committed_pilot_predicts_every_designed_step_resolvable_and_round_1_s_step_not() -> None:
    fits = json.loads(PILOT_RESULTS.read_text(encoding="utf-8"))["fits"]
    assert set(fits) == set(PILOT_LANGUAGES)
    for language, fit in fits.items():
        dose = DoseResponse(**{**fit, "points": [tuple(point) for point in fit["points"]]})
        assert dose == fit_dose_response(language, dose.points)  # the committed fit is the fit of its points
        assert dose.resolvable(min(MIDDLE / LOW, HIGH / MIDDLE)), language
        assert not dose.resolvable(0.35 / 0.225), language  # round 1's 22.5% -> 35%

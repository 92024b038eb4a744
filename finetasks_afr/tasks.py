"""The task suite for LightEval: what `lighteval accelerate ... --custom-tasks finetasks_afr/tasks.py` loads.

Importing this module (1) applies the fixes for lighteval's acc_norm_token and acc_norm_pmi
(finetasks_afr.compat), the few-shot sampler that never shows a document (or a same-text duplicate) among its
own examples and draws each document's examples with its own seed (finetasks_afr.fewshot), and partial scoring
with one context per choice for Winogrande CF (finetasks_afr.partial_scoring), (2) registers in-language prompt
words for every covered language (finetasks_afr.literals), then (3) builds TASKS_TABLE: every benchmark family
in every language its dataset covers, in CF / MCF / hybrid (or generative) form, with in-language and `_enprompt`
English prompt words. Data come from the hub (pinned revisions) or from the mirror named by $FINETASKS_AFR_DATA_DIR.
"""

from __future__ import annotations

from finetasks_afr import compat, fewshot, partial_scoring
from finetasks_afr.benchmarks import all_tasks
from finetasks_afr.benchmarks.common import SKIPPED_ROWS, TASK_INFO, TaskInfo
from finetasks_afr.literals import register_literals

compat.apply()
fewshot.apply()
partial_scoring.apply()
register_literals()
TASKS_TABLE = all_tasks()

__all__ = ["SKIPPED_ROWS", "TASKS_TABLE", "TASK_INFO", "TaskInfo"]

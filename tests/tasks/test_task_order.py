"""lighteval 0.13 orders the task list through a set (`Registry._get_full_task_list_from_input_string`), so the
documents' order, and so the float32 batches, follow the hash seed: perplexities then differ in the ninth digit
between two processes. `finetasks_afr.scoring.lighteval_runtime.tasks_in_given_order` keeps the given order; stock
lighteval still has the bug."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import pytest

NAMES = [f"task_{letter}{index}|0" for index in range(6) for letter in "qwertyuiop"]  # 60 names
GIVEN = [*NAMES, NAMES[3], NAMES[0]]  # duplicates removed, first occurrence kept
PROBE = """
import json, sys
from lighteval.tasks.registry import Registry
stock = Registry._get_full_task_list_from_input_string(None, ",".join(json.loads(sys.argv[1])))
from finetasks_afr.scoring.lighteval_runtime import tasks_in_given_order  # only after the stock order is read
with tasks_in_given_order():
    fixed = Registry._get_full_task_list_from_input_string(None, ",".join(json.loads(sys.argv[2])))
print(json.dumps({"stock": stock, "fixed": fixed}))
"""


@functools.cache
def _orders(seed: int) -> dict[str, list[str]]:
    """Under PYTHONHASHSEED=seed, in one process: stock lighteval's order of NAMES, then the fixed order of GIVEN
    (nothing of the project is imported before the stock order is read)."""
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(NAMES), json.dumps(GIVEN)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_stock_lighteval_orders_the_tasks_by_the_hash_seed() -> None:
    orders = {tuple(_orders(seed)["stock"]) for seed in (1, 2)}
    assert all(sorted(order) == sorted(NAMES) for order in orders)
    assert len(orders) > 1, "lighteval's task order no longer follows the hash seed: drop tasks_in_given_order"


@pytest.mark.slow
def test_the_tasks_keep_their_given_order_under_any_seed() -> None:
    for seed in (1, 2):
        assert _orders(seed)["fixed"] == NAMES


def test_the_fix_is_in_force_in_the_sweeps_registry_context() -> None:
    from lighteval.tasks.registry import Registry

    from finetasks_afr.scoring.lighteval_runtime import custom_tasks_only

    with custom_tasks_only():
        registry = Registry.__new__(Registry)  # the parser reads nothing of the instance
        assert registry._get_full_task_list_from_input_string(",".join(reversed(NAMES))) == NAMES[::-1]

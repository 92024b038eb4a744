"""lighteval 0.13 orders the task list through a set (`Registry._get_full_task_list_from_input_string`), so the
documents' order, and so the float32 batches, follow the hash seed: perplexities then differ in the ninth digit
between two processes. `finetasks_afr.scoring.lighteval_runtime.tasks_in_given_order` keeps the given order; stock
lighteval still has the bug."""

from __future__ import annotations

import json
import os
import subprocess
import sys

NAMES = [f"task_{letter}{index}|0" for index in range(6) for letter in "qwertyuiop"]  # 60 names
PROBE = """
import json, sys
from lighteval.tasks.registry import Registry
fixed = sys.argv[1] == "fixed"
tasks = ",".join(json.loads(sys.argv[2]))
if fixed:
    from finetasks_afr.scoring.lighteval_runtime import tasks_in_given_order
    with tasks_in_given_order():
        print(json.dumps(Registry._get_full_task_list_from_input_string(None, tasks)))
else:
    print(json.dumps(Registry._get_full_task_list_from_input_string(None, tasks)))
"""


def _order(mode: str, seed: int, names: list[str]) -> list[str]:
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode, json.dumps(names)], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_stock_lighteval_orders_the_tasks_by_the_hash_seed() -> None:
    orders = {tuple(_order("stock", seed, NAMES)) for seed in (1, 2)}
    assert all(sorted(order) == sorted(NAMES) for order in orders)
    assert len(orders) > 1, "lighteval's task order no longer follows the hash seed: drop tasks_in_given_order"


def test_the_tasks_keep_their_given_order_under_any_seed() -> None:
    given = [*NAMES, NAMES[3], NAMES[0]]  # duplicates removed, first occurrence kept
    for seed in (1, 2):
        assert _order("fixed", seed, given) == NAMES


def test_the_fix_is_in_force_in_the_sweeps_registry_context() -> None:
    from lighteval.tasks.registry import Registry

    from finetasks_afr.scoring.lighteval_runtime import custom_tasks_only

    with custom_tasks_only():
        registry = Registry.__new__(Registry)  # the parser reads nothing of the instance
        assert registry._get_full_task_list_from_input_string(",".join(reversed(NAMES))) == NAMES[::-1]

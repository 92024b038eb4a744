"""Run lighteval's own tests with (or without) this project's run-time patches of lighteval 0.13.

As a pytest plugin (`PYTHONPATH=scripts python -m pytest -p lighteval_patched_conftest ...`):

    --finetasks-patches=on   (default) before any test module is collected (so before the tests import lighteval's
                             modules), call `finetasks_afr.scoring.compat.apply()`,
                             `finetasks_afr.scoring.partial_scoring.apply()`
                             and `finetasks_afr.prompts.fewshot.apply()`, assert that every fix is in force (an error
                             stops
                             the session otherwise), and print which are; at the end of the session, check that
                             they still are (a test that undid them would make the run meaningless).
    --finetasks-patches=off  apply nothing; at the end, check that no `finetasks_afr` module was imported at all.
    --finetasks-outcomes=F   write {node id: {"outcome": ..., "message": ...}} to F (JSON); the outcome of a test is
                             "failed" if any of its reports failed in the call phase (subtests included), "error" if
                             its setup or teardown failed (or, for a collector, collection), else "passed", else
                             "skipped".

As a script: `python scripts/lighteval_patched_conftest.py compare UNPATCHED.json PATCHED.json [--known ID | REASON]`
prints both runs' counts and every test whose outcome differs, and exits 1 when a test that passes without the
patches fails (or errors) with them, when a test fails in both runs without being listed with `--known`, or when a
run recorded nothing. `scripts/lighteval_upstream_tests.sh` does both runs and the comparison.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

OPTION_PATCHES = "--finetasks-patches"
OPTION_OUTCOMES = "--finetasks-outcomes"
BAD = ("failed", "error")
_RANK = {"skipped": 0, "passed": 1, "failed": 2, "error": 3}

_state: dict[str, Any] = {"mode": "on", "outcomes": {}, "active": [], "lighteval": None}


# ------------------------------------------------------------------------------------------ patch control


def apply_patches() -> list[str]:
    """Apply the three patch modules; raise unless every fix is in force. Returns one line per fix."""
    from finetasks_afr.prompts import fewshot
    from finetasks_afr.scoring import compat, partial_scoring

    outcomes = {**compat.apply(), **partial_scoring.apply(), **fewshot.apply()}
    not_applied = {fix: outcome for fix, outcome in outcomes.items() if outcome != "applied"}
    if not_applied:
        raise RuntimeError(f"finetasks_afr patches not in force: {not_applied}")
    missing = patches_missing()
    if missing:
        raise RuntimeError(f"finetasks_afr patches reported applied but not in force: {missing}")
    return [f"{fix}: {outcome}" for fix, outcome in outcomes.items()]


def patches_missing() -> list[str]:
    """What is not in force (empty when everything is): each module's own state and the patched attributes."""
    from lighteval.models.transformers.transformers_model import TransformersModel

    from finetasks_afr.prompts import fewshot
    from finetasks_afr.scoring import compat, partial_scoring

    missing = sorted(set(compat.FIXES) - compat.applied())
    if not partial_scoring.applied():
        missing.append(partial_scoring.FIX)
    if not fewshot.applied():
        missing.append(fewshot.FIX)
    rolling = TransformersModel.__dict__.get("loglikelihood_rolling")
    if compat.FIX_ROLLING in compat.applied() and not getattr(rolling, compat._COMPAT_MARK, False):
        missing.append("TransformersModel.loglikelihood_rolling is not compat's replacement")
    return missing


# ------------------------------------------------------------------------------------------ pytest hooks


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("finetasks_afr", "finetasks-afr patches of lighteval")
    group.addoption(OPTION_PATCHES, choices=("on", "off"), default="on", help="apply the patches (default: on)")
    group.addoption(OPTION_OUTCOMES, default=None, help="write each test's outcome to this JSON file")


def pytest_configure(config: Any) -> None:
    _state["mode"] = config.getoption(OPTION_PATCHES)
    if _state["mode"] == "on":
        _state["active"] = apply_patches()  # raises: pytest stops with the reason, no test runs
    elif any(name == "finetasks_afr" or name.startswith("finetasks_afr.") for name in sys.modules):
        raise RuntimeError("--finetasks-patches=off, but finetasks_afr was imported before the tests ran")
    import lighteval

    _state["lighteval"] = f"lighteval {lighteval.__version__} from {Path(lighteval.__file__).parent}"


def pytest_report_header(config: Any) -> list[str]:
    if _state["mode"] == "off":
        return [_state["lighteval"], "finetasks_afr patches: OFF (lighteval as released)"]
    return [_state["lighteval"], "finetasks_afr patches: ON", *(f"  {line}" for line in _state["active"])]


def _message(report: Any) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return str(crash.message)
    text = str(report.longrepr or "")
    return text.strip().splitlines()[-1] if text.strip() else ""


def _record(nodeid: str, outcome: str, message: str = "") -> None:
    previous = _state["outcomes"].get(nodeid)
    if previous is None or _RANK[outcome] > _RANK[previous["outcome"]]:
        _state["outcomes"][nodeid] = {"outcome": outcome, "message": message[:500]}


def pytest_runtest_logreport(report: Any) -> None:
    if report.failed:
        _record(report.nodeid, "failed" if report.when == "call" else "error", _message(report))
    elif report.skipped:
        _record(report.nodeid, "skipped", _message(report))
    elif report.when == "call":
        _record(report.nodeid, "passed")


def pytest_collectreport(report: Any) -> None:
    if report.failed:
        _record(report.nodeid, "error", _message(report))


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    problem = None
    if _state["mode"] == "on":
        missing = patches_missing()
        if missing:
            problem = f"finetasks_afr patches no longer in force at the end of the session: {missing}"
    elif any(name.startswith("finetasks_afr") for name in sys.modules):
        problem = "--finetasks-patches=off, but a test imported finetasks_afr"
    if problem:
        _record("<session>", "error", problem)
        session.exitstatus = 3
    path = session.config.getoption(OPTION_OUTCOMES)
    if path:
        Path(path).write_text(json.dumps(_state["outcomes"], indent=1, sort_keys=True) + "\n")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    state = "ON: " + ", ".join(line.split(":")[0] for line in _state["active"]) if _state["mode"] == "on" else "OFF"
    terminalreporter.write_line(f"finetasks_afr patches {state}")


# ------------------------------------------------------------------------------------------ comparison


def counts(outcomes: dict[str, dict[str, str]]) -> str:
    tally = Counter(entry["outcome"] for entry in outcomes.values())
    return ", ".join(f"{tally[name]} {name}" for name in ("passed", "failed", "error", "skipped"))


def _first_line(message: str) -> str:
    """The start of a failure message on one line (a bare 'LookupError:' gets the line after it)."""
    lines = [line.strip() for line in message.splitlines() if line.strip().strip("*")]
    text = ""
    for line in lines:
        text = f"{text} {line}".strip()
        if len(text) >= 60:
            break
    return text[:300]


def compare(unpatched: dict, patched: dict, known: dict[str, str]) -> int:
    """Print the comparison; return the exit status (0: no regression, every common failure is known)."""
    status = 0
    print(f"without patches: {counts(unpatched)}")
    print(f"with patches:    {counts(patched)}")
    for name, run in (("without patches", unpatched), ("with patches", patched)):
        if not run:
            print(f"ERROR: the run {name} recorded no test")
            status = 1
    for nodeid in sorted(set(unpatched) | set(patched)):
        before = unpatched.get(nodeid, {"outcome": "absent", "message": ""})
        after = patched.get(nodeid, {"outcome": "absent", "message": ""})
        both_bad = before["outcome"] in BAD and after["outcome"] in BAD
        if both_bad and nodeid in known:
            print(f"known upstream failure (fails without the patches too): {nodeid}\n    reason: {known[nodeid]}")
            continue
        if both_bad:
            print(f"ERROR: fails in both runs and is not listed as a known upstream failure: {nodeid}")
            print(f"    {after['outcome']}: {_first_line(after['message'])}")
            status = 1
            continue
        if nodeid in known:
            print(
                f"note: listed as a known upstream failure but now {before['outcome']} / {after['outcome']}: {nodeid}"
            )
        if before["outcome"] == after["outcome"]:
            continue
        regression = after["outcome"] in BAD or (before["outcome"] == "passed" and after["outcome"] == "absent")
        label = "REGRESSION with the patches" if regression else "differs"
        print(f"{label}: {nodeid}: {before['outcome']} without, {after['outcome']} with")
        for message in (after["message"], before["message"]):
            if message:
                print(f"    {_first_line(message)}")
        status = 1 if regression else status
    print("OK: no test fails with the patches that passes without them" if status == 0 else "FAILED")
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cmp = sub.add_parser("compare", help="compare the outcome files of a run without and a run with the patches")
    cmp.add_argument("unpatched", type=Path)
    cmp.add_argument("patched", type=Path)
    cmp.add_argument("--known", action="append", default=[], help="'NODE ID | REASON': a known upstream failure")
    args = parser.parse_args(argv)
    known = {}
    for entry in args.known:
        nodeid, separator, reason = entry.partition(" | ")
        if not separator or not reason.strip():
            parser.error(f"--known needs 'NODE ID | REASON', got {entry!r}")
        known[nodeid.strip()] = reason.strip()
    runs = []
    for path in (args.unpatched, args.patched):
        runs.append(json.loads(path.read_text()) if path.is_file() else {})
    return compare(runs[0], runs[1], known)


if __name__ == "__main__":
    sys.exit(main())

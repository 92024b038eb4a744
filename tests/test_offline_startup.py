"""The CLI's offline decision (issue 54, item 7): run directly, not through make, the hub was not declared off, so a
hub-only task failed with a raw `ConnectionError ... LocalEntryNotFoundError`, and a sweep named it once per
checkpoint. `finetasks_afr.cli.offline` decides once at start-up, as make's exported variables do."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from finetasks_afr.cli import offline
from finetasks_afr.cli.offline import OFFLINE_VARIABLES, decide_offline, hub_address, hub_reachable


class FakeConnection:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def refused(address: tuple[str, int], timeout: float) -> object:
    raise OSError("Network is unreachable")


def test_an_unreachable_hub_switches_all_three_variables_on() -> None:
    environ: dict[str, str] = {}
    note = decide_offline(environ, refused, timeout=0.5)
    assert all(environ[name] == "1" for name in OFFLINE_VARIABLES), environ
    assert note is not None and "huggingface.co:443 not reachable" in note and "HF_HUB_OFFLINE=0" in note


def test_a_reachable_hub_changes_nothing_and_the_connection_is_closed() -> None:
    opened: list[tuple[tuple[str, int], FakeConnection]] = []

    def connect(address: tuple[str, int], timeout: float) -> FakeConnection:
        opened.append((address, FakeConnection()))
        return opened[-1][1]

    environ: dict[str, str] = {}
    assert decide_offline(environ, connect) is None and environ == {}
    assert opened[0][0] == ("huggingface.co", 443) and opened[0][1].closed


def test_the_users_choice_is_kept_without_a_check() -> None:
    def never(address: tuple[str, int], timeout: float) -> object:
        raise AssertionError("checked although the user chose")

    chosen_online = {"HF_HUB_OFFLINE": "0"}
    assert decide_offline(chosen_online, never) is None and chosen_online == {"HF_HUB_OFFLINE": "0"}
    chosen_offline = {"HF_HUB_OFFLINE": "1"}
    assert decide_offline(chosen_offline, never) is None  # as make: the other two follow
    assert chosen_offline == dict.fromkeys(OFFLINE_VARIABLES, "1")


def test_a_hanging_lookup_is_bounded_by_the_timeout() -> None:
    """`getaddrinfo` ignores socket timeouts: a resolver's retries took 37 s before."""

    def hangs(address: tuple[str, int], timeout: float) -> object:
        time.sleep(5)
        return FakeConnection()

    started = time.perf_counter()
    assert not hub_reachable(("huggingface.co", 443), hangs, timeout=0.2)
    assert time.perf_counter() - started < 1


def test_hf_endpoint_names_the_host_checked() -> None:
    assert hub_address({"HF_ENDPOINT": "https://hf-mirror.example.org:8443"}) == ("hf-mirror.example.org", 8443)
    assert hub_address({"HF_ENDPOINT": "http://mirror.local"}) == ("mirror.local", 80)


def test_main_decides_before_the_command_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The console script, not only the function: the command (here a stand-in) sees the variables set."""
    import finetasks_afr.cli.application as application
    from finetasks_afr.cli import main

    for name in OFFLINE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(offline, "hub_reachable", lambda *args, **kwargs: False)
    seen: dict[str, str | None] = {}

    def command() -> None:
        import os

        seen.update({name: os.environ.get(name) for name in OFFLINE_VARIABLES})

    monkeypatch.setattr(application, "app", command)
    monkeypatch.setattr(sys, "argv", ["finetasks-afr", "data", "sources"])
    main()
    assert seen == dict.fromkeys(OFFLINE_VARIABLES, "1")


@pytest.mark.slow
def test_a_hub_only_task_is_named_once_in_one_line_without_the_variables_preset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No HF_HUB_OFFLINE set, no internet here: the start-up check (the real one, bounded) switches the hub off,
    and the sweep names the hub-only task in its one line, once for its three checkpoints."""
    from finetasks_afr.cli import app

    for name in OFFLINE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("FINETASKS_AFR_DATA_DIR", raising=False)
    offline.apply_at_start_up(["sweep"])
    for step in (1, 2, 3):
        checkpoint = tmp_path / "runs" / "mix-a" / "seed-1" / f"checkpoint-{step}"
        checkpoint.mkdir(parents=True)
        (checkpoint / "config.json").write_text(json.dumps({"model_type": "not-a-model"}), encoding="utf-8")
        (checkpoint / "model.safetensors").write_bytes(b"not weights")
        (checkpoint / "tokenizer.json").write_text("{}", encoding="utf-8")
    out = tmp_path / "sweep"
    result = CliRunner().invoke(
        app, ["sweep", str(tmp_path / "runs"), "--tasks", "afrixnli_hau_mcf|5", "--out", str(out)]
    )
    said = " ".join(result.output.split())
    assert result.exit_code == 1, result.output
    line = "afrixnli_hau_mcf|5: hub-only (masakhane/afrixnli), no mirror configured"
    assert said.count(line) == 1 and "3 checkpoints" in said, said
    assert "Traceback" not in result.output and "LocalEntryNotFoundError" not in result.output


@pytest.mark.slow
def test_recommend_names_a_dataset_it_cannot_reach_without_waiting_for_retries(tmp_path: Path) -> None:
    """The console script with no offline variable set: `recommend --texts` of a dataset in no mirror waited
    through 5 DNS retries (37 s) before its error; decided offline at start-up, the error comes at once."""
    import os
    import subprocess

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}", encoding="utf-8")
    env = {
        name: value for name, value in os.environ.items() if name not in (*OFFLINE_VARIABLES, "FINETASKS_AFR_DATA_DIR")
    }
    env["HF_HUB_CACHE"] = str(tmp_path / "empty-cache")
    command = [sys.executable, "-m", "finetasks_afr.cli", "recommend", "-m", str(model), "--texts", "sib200:hau_Latn"]
    started = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    elapsed = time.perf_counter() - started
    said = " ".join(result.stderr.split()) + " ".join(result.stdout.split())
    assert result.returncode == 2 and "cannot load sib200 config 'hau_Latn'" in said, said
    assert said.count("offline: huggingface.co:443 not reachable") == 1 and "Retrying" not in said, said
    assert elapsed < 30, f"{elapsed:.1f} s"

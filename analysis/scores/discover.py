"""Find the checkpoints of training runs: local run directories, globs, and hub repositories with one revision
per step.

A checkpoint is identified by (run, seed, step); `tokens` (tokens seen at that step) comes from the HF Trainer's
`trainer_state.json` (`num_input_tokens_seen`) or from `tokens_per_step * step`.

Run sources (one string each, as on the command line):

- `path/to/run`: a directory holding `checkpoint-<step>` (HF Trainer) or `step-<step>` / `step<step>` folders;
- `path/to/parent`: a directory whose sub-directories (up to two levels down) are such run directories, e.g.
  `sweeps/mix-a/seed-1/checkpoint-100` or `sweeps/mix-a-seed1/checkpoint-100`;
- a glob matching checkpoint folders, e.g. `'ckpts/*/ckpt_*'` (the step is the last number in the folder name);
- `hf://org/repo`: a hub repository whose branches or tags name steps (`step1000`, Pythia style);
- any of these prefixed with `NAME=` or `NAME:SEED=` names the run (and its seed) instead of inferring them.

Inference: a run directory called `<run>-seed<k>` / `<run>_seed_<k>` is run `<run>` seed k; one called `seed-<k>` /
`seed<k>` is seed k of the run named by its parent; otherwise the directory name is the run and the seed is empty.
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from analysis.base.io import safe_file_name
from analysis.base.names import control_character_problem, nfc

WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
_STEP_DIR = re.compile(r"^(?:checkpoint|step|ckpt|global_step|iter)[-_]?(\d+)$", re.IGNORECASE)
_LAST_NUMBER = re.compile(r"(\d+)(?!.*\d)")
_SEEDED_RUN = re.compile(r"^(?P<run>.+?)[-_.]seed[-_]?(?P<seed>\d+)$", re.IGNORECASE)
_SEED_DIR = re.compile(r"^seed[-_]?(?P<seed>\d+)$", re.IGNORECASE)
_NAMED = re.compile(r"^(?P<run>[^=:/\\]+?)(?::(?P<seed>\d+))?=(?P<source>.+)$")
HUB_PREFIX = "hf://"
DEFAULT_REVISION_PATTERN = r"^step[-_]?(\d+)$"


class DiscoveryError(ValueError):
    """A run source that does not describe checkpoints; the message names it and says how to fix it."""


@dataclass(frozen=True)
class Checkpoint:
    """One model to evaluate: where it is, and where it sits in its training run."""

    run: str
    seed: int | None
    step: int
    tokens: int | None
    path: str  # local directory, or the hub repository id
    revision: str | None = None  # hub revision (branch, tag or commit); None for a local directory

    @property
    def key(self) -> str:
        """A file-name-safe identity, unique within a sweep: `<run>/seed-<s>/step-<N>`, the run through the one
        names-to-paths rule (`analysis.base.io.safe_file_name`: distinct runs, distinct folders)."""
        seed = "none" if self.seed is None else str(self.seed)
        return f"{safe_file_name(self.run)}/seed-{seed}/step-{self.step:09d}"

    @property
    def label(self) -> str:
        seed = "" if self.seed is None else f" seed {self.seed}"
        return f"{self.run}{seed} step {self.step}"

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Checkpoint:
        return cls(
            run=str(data["run"]),
            seed=data.get("seed"),
            step=int(data["step"]),
            tokens=data.get("tokens"),
            path=str(data["path"]),
            revision=data.get("revision"),
        )


@dataclass(frozen=True)
class Incomplete:
    """A checkpoint folder that cannot be evaluated, and why."""

    path: str
    reason: str


# --------------------------------------------------------------------------------------------------
# Local checkpoints


def missing_files(directory: Path) -> list[str]:
    """What a loadable transformers checkpoint lacks: its config, any weights file, every shard its index names,
    and the full length of each safetensors file (`truncated_safetensors`: a save still being written)."""
    missing = [] if (directory / "config.json").is_file() else ["config.json"]
    if not any((directory / name).is_file() for name in WEIGHT_FILES):
        missing.append("weights (" + " or ".join(WEIGHT_FILES) + ")")
    for index in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        missing += [f"{shard} (named by {index})" for shard in _missing_shards(directory / index)]
    missing += [f"the end of {name}" for name in truncated_safetensors(directory)]
    return missing


def _missing_shards(index: Path) -> list[str]:
    """The weight files a sharded checkpoint's index names that are not there (none when there is no index)."""
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map", {})
    except (OSError, ValueError, AttributeError):
        return []
    shards = sorted(set(weight_map.values())) if isinstance(weight_map, dict) else []
    return [shard for shard in shards if isinstance(shard, str) and not (index.parent / shard).is_file()]


def truncated_safetensors(directory: Path) -> list[str]:
    """The safetensors files in `directory` shorter than their own header says (8 bytes of header length, the JSON
    header, then the tensors up to the largest `data_offsets` end): a file still being copied or saved. A file whose
    header does not parse is left to the loader, which names what is wrong with it."""
    short = []
    for path in sorted(directory.glob("*.safetensors")):
        try:
            with path.open("rb") as handle:
                length = int.from_bytes(handle.read(8), "little")
                header = json.loads(handle.read(length)) if 0 < length < 100_000_000 else None
            size = path.stat().st_size
        except (OSError, ValueError):
            continue
        if not isinstance(header, dict):
            continue
        ends = [t["data_offsets"][1] for k, t in header.items() if k != "__metadata__" and isinstance(t, dict)
                and isinstance(t.get("data_offsets"), list) and len(t["data_offsets"]) == 2]  # fmt: skip
        if size < 8 + length + max(ends, default=0):
            short.append(path.name)
    return short


def step_of(directory: Path) -> int | None:
    """The training step a checkpoint folder stands for: from its name, else from its trainer_state.json."""
    match = _STEP_DIR.match(directory.name)
    if match:
        return int(match.group(1))
    state = read_trainer_state(directory)
    if state and isinstance(state.get("global_step"), int):
        return state["global_step"]
    match = _LAST_NUMBER.search(directory.name)
    return int(match.group(1)) if match else None


def read_trainer_state(directory: Path) -> dict | None:
    """The HF Trainer's `trainer_state.json` of a checkpoint, or None when there is none.

    A corrupt file is an error naming it: tokens silently missing would hide a broken checkpoint.
    """
    path = directory / "trainer_state.json"
    if not path.is_file():
        return None
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise DiscoveryError(f"{path}: unreadable trainer state ({error}); fix: restore or delete the file") from error
    if not isinstance(state, dict):
        raise DiscoveryError(f"{path}: expected a JSON object; fix: restore or delete the file")
    return state


def recorded_tokens(directory: Path) -> int | None:
    """`num_input_tokens_seen` of a checkpoint's trainer_state.json (HF Trainer with include_num_input_tokens_seen),
    or None when there is no state or it records no tokens."""
    state = read_trainer_state(directory)
    seen = state.get("num_input_tokens_seen") if state else None
    return int(seen) if isinstance(seen, int | float) and not isinstance(seen, bool) and seen > 0 else None


def tokens_of(directory: Path | None, step: int, tokens_per_step: int | None) -> int | None:
    """Tokens seen at `step`: `tokens_per_step * step` when the user gave it (an explicit choice wins over what the
    trainer recorded, see `token_override_note`), else the trainer state's `num_input_tokens_seen`, else None."""
    if tokens_per_step is not None:
        return tokens_per_step * step
    return None if directory is None else recorded_tokens(directory)


def tokens_origin(checkpoint: Checkpoint, tokens_per_step: int | None) -> str:
    """Where a checkpoint's token count came from, for messages: the option, the trainer state file, or nowhere."""
    if checkpoint.tokens is None:
        return "no token count"
    if tokens_per_step is not None:
        return f"--tokens-per-step {tokens_per_step:,} x step"
    return str(Path(checkpoint.path) / "trainer_state.json")


def token_override_note(checkpoints: Iterable[Checkpoint], tokens_per_step: int | None) -> list[str]:
    """A note when `--tokens-per-step` replaced counts the checkpoints' trainer_state.json files record."""
    if tokens_per_step is None:
        return []
    overridden = []
    for checkpoint in {c.path: c for c in checkpoints if c.revision is None}.values():
        directory = Path(checkpoint.path)
        recorded = recorded_tokens(directory) if directory.is_dir() else None
        if recorded is not None and recorded != checkpoint.tokens:
            overridden.append((directory / "trainer_state.json", recorded, checkpoint.tokens))
    if not overridden:
        return []
    path, recorded, used = overridden[0]
    return [
        f"tokens = --tokens-per-step {tokens_per_step:,} x step, which overrides the num_input_tokens_seen of "
        f"{len(overridden):,} checkpoint(s)' trainer_state.json (e.g. {path}: recorded {recorded:,}, used {used:,}); "
        "leave --tokens-per-step out to use the recorded counts"
    ]


def token_conflicts(found: Iterable[tuple[Checkpoint, str, str]]) -> list[str]:
    """(checkpoint, results file, origin of its tokens) triples -> one line per (run, seed, step) that two files
    give two different token counts: the one true token conflict (seeds of a run may differ; one seed may not)."""
    counts: dict[tuple[str, int | None, int], dict[int, tuple[str, str]]] = {}
    for checkpoint, where, origin in found:
        if checkpoint.tokens is not None:
            key = (checkpoint.run, checkpoint.seed, checkpoint.step)
            counts.setdefault(key, {}).setdefault(checkpoint.tokens, (where, origin))
    return [
        f"{run} seed {'none' if seed is None else seed} step {step}: "
        + " vs ".join(f"{tokens:,} ({where}; tokens from {origin})" for tokens, (where, origin) in sorted(seen.items()))
        for (run, seed, step), seen in sorted(counts.items(), key=lambda item: str(item[0]))
        if len(seen) > 1
    ]


def is_checkpoint_dir(directory: Path) -> bool:
    return directory.is_dir() and (_STEP_DIR.match(directory.name) is not None)


def run_identity(run_dir: Path) -> tuple[str, int | None]:
    """(run, seed) inferred from a run directory's name and, for `seed-<k>` folders, its parent's."""
    seed_only = _SEED_DIR.match(run_dir.name)
    if seed_only:
        return run_dir.resolve().parent.name, int(seed_only.group("seed"))
    seeded = _SEEDED_RUN.match(run_dir.name)
    if seeded:
        return seeded.group("run"), int(seeded.group("seed"))
    return run_dir.resolve().name, None


def identity_from_path(path: str) -> tuple[str, int | None, int | None]:
    """(run, seed, step) of a checkpoint path, by the same rules as discovery; for results of a user's own loop."""
    directory = Path(path)
    step = step_of(directory) if directory.exists() else None
    if step is None:
        match = _LAST_NUMBER.search(directory.name)
        step = int(match.group(1)) if match else None
    run, seed = run_identity(directory.parent) if directory.parent != directory else (directory.name, None)
    return run, seed, step


def model_root(checkpoint: Checkpoint) -> tuple[str, ...]:
    """The path components of the model a checkpoint belongs to: its hub repository, or the folder holding its
    checkpoint folder (the run's, or the seed's), normalised but not resolved (the folder may be gone)."""
    if checkpoint.revision is not None:
        return tuple(part for part in checkpoint.path.split("/") if part)
    return Path(os.path.normpath(checkpoint.path)).parent.parts


def _distinguishing_depth(groups: list[list[tuple[str, ...]]]) -> int | None:
    """The depth, counted from the end of the model roots, of the one folder that tells colliding roots apart: in
    every group the roots agree below it and differ at it (`llama-1b/mix-a/seed-1` and `gemma-2b/mix-a/seed-1`:
    depth 3). None when the roots differ in more than their layout allows (`x/mix-a/seed-1`, `y/mix-a-seed1`)."""
    shortest = min(len(root) for group in groups for root in group)
    for depth in range(1, shortest + 1):
        at_depth = [[root[-depth] for root in group] for group in groups]
        if all(len(set(names)) == len(names) for names in at_depth):
            return depth
        if any(len(set(names)) > 1 for names in at_depth):
            return None  # some roots already differ below a depth that would tell all apart
    return None


def separate_models(
    checkpoints: Sequence[Checkpoint], named: Sequence[bool] | None = None
) -> tuple[list[Checkpoint], list[str]]:
    """The checkpoints with each model in its own run where two models would share a (run, seed), and notes
    saying so; for results collected from files. `named[i]` says checkpoint i's run was named by a sweep (its
    manifest), not read from its path.

    Runs are named from paths (`llama-1b/mix-a/seed-1/checkpoint-2` is run mix-a), so two different models whose
    paths end alike would land on the same (run, seed, step): the newer file would then silently replace the other
    as if it were a re-run, or both would mix into one training curve. A checkpoint's model is its root (the hub
    repository, or the folder that holds its checkpoint folder). A (run, seed) clashes when one of its steps comes
    from two checkpoint folders (or repositories), or when runs read from paths come from two roots; a sweep's
    named run may keep its checkpoints in several folders (its discovery already refused two per step). Every
    checkpoint of a clashing run is renamed `<folder>/<run>`, with the folder that tells the roots apart
    (`llama-1b/mix-a`, `gemma-2b/mix-a`; `org-one/pythia-160m` for hub repositories), so seeds of one model stay
    together. Models that no single folder tells apart are an error naming them.
    """
    flags = list(named) if named is not None else [False] * len(checkpoints)
    roots: dict[tuple[str, int | None], dict[tuple[str, ...], str]] = {}
    path_roots: dict[tuple[str, int | None], set[tuple[str, ...]]] = {}
    per_step: dict[tuple[str, int | None, int], set[tuple[str, str | None]]] = {}
    for c, by_sweep in zip(checkpoints, flags, strict=True):
        roots.setdefault((c.run, c.seed), {}).setdefault(model_root(c), c.path)
        if not by_sweep:
            path_roots.setdefault((c.run, c.seed), set()).add(model_root(c))
        per_step.setdefault((c.run, c.seed, c.step), set()).add((os.path.normpath(c.path), c.revision))
    clash = {(run, seed) for (run, seed, _), found in per_step.items() if len(found) > 1}
    clash |= {key for key, found in path_roots.items() if len(found) > 1}
    clashing = {key: roots[key] for key in clash}
    result = list(checkpoints)
    notes = []
    for run in sorted({run for run, _ in clashing}):
        groups = [list(found) for (name, _), found in clashing.items() if name == run]
        depth = _distinguishing_depth(groups)
        if depth is None or depth < 2:
            examples = [path for (name, _), found in clashing.items() if name == run for path in found.values()]
            raise DiscoveryError(
                f"results of {len(examples)} different models would all be run {run!r} with the same seed: "
                f"{'; '.join(examples[:4])}; no one folder name tells them apart. Fix: collect each model into its "
                "own table, or evaluate them with a sweep that names each run (NAME[:SEED]=PATH)"
            )
        renamed: dict[str, str] = {}
        for index, c in enumerate(result):
            root = model_root(c)
            if c.run == run and depth <= len(root):
                result[index] = replace(c, run=f"{root[-depth]}/{run}")
                renamed.setdefault(result[index].run, str(Path(*root[: len(root) - depth + 1])))
        notes.append(
            f"results of different models would share run {run!r}; each is named by the folder that tells them "
            "apart: " + ", ".join(f"{name} (from {where})" for name, where in sorted(renamed.items()))
        )
    return result, notes


def _run_dirs(root: Path, depth: int = 2) -> list[Path]:
    """`root` if it holds checkpoint folders, else its descendants (to `depth`) that do."""
    if any(is_checkpoint_dir(child) for child in root.iterdir()):
        return [root]
    if depth == 0:
        return []
    found: list[Path] = []
    for child in sorted(p for p in root.iterdir() if p.is_dir()):
        found.extend(_run_dirs(child, depth - 1))
    return found


def _local_checkpoints(
    folders: Iterable[Path], run: str, seed: int | None, tokens_per_step: int | None, source: str
) -> tuple[list[Checkpoint], list[Incomplete]]:
    found: list[Checkpoint] = []
    incomplete: list[Incomplete] = []
    folders = sorted(folders)
    with_state = sum(1 for folder in folders if (folder / "trainer_state.json").is_file())
    for folder in folders:
        if with_state and not (folder / "trainer_state.json").is_file():
            incomplete.append(Incomplete(str(folder), _no_state_reason(with_state)))
            continue
        step = step_of(folder)
        if step is None:
            raise DiscoveryError(f"{folder}: no step in the folder name or its trainer_state.json (from {source}); "
                                 "fix: name checkpoint folders checkpoint-<step>")  # fmt: skip
        missing = missing_files(folder)
        if missing:
            incomplete.append(Incomplete(str(folder), "missing " + ", ".join(missing)))
            continue
        tokens = tokens_of(folder, step, tokens_per_step)
        found.append(Checkpoint(run, seed, step, tokens, str(folder.resolve())))
    return found, incomplete


def _no_state_reason(siblings: int) -> str:
    """Why a checkpoint without trainer_state.json is not evaluated when its siblings have one."""
    return (
        f"no trainer_state.json, which {siblings} sibling checkpoint(s) of its run have: the HF Trainer writes it "
        "last, so this checkpoint is probably still being written (evaluated now, its token count would be missing)"
    )


def _from_directory(
    root: Path, name: tuple[str, int | None] | None, tokens_per_step: int | None, source: str
) -> tuple[list[Checkpoint], list[Incomplete]]:
    run_dirs = _run_dirs(root)
    if not run_dirs:
        raise DiscoveryError(
            f"{source}: no checkpoint folders (checkpoint-<step>, step-<step>) in {root} or two levels below it; "
            "fix: point at a training output directory or pass a glob of checkpoint folders"
        )
    if name is not None and len(run_dirs) > 1:
        raise DiscoveryError(
            f"{source}: a run name was given but {len(run_dirs)} run directories were found "
            f"({', '.join(str(d) for d in run_dirs[:3])}, ...); fix: name each run directory separately"
        )
    found: list[Checkpoint] = []
    incomplete: list[Incomplete] = []
    for run_dir in run_dirs:
        run, seed = name if name is not None else run_identity(run_dir)
        folders = [child for child in run_dir.iterdir() if is_checkpoint_dir(child)]
        more, bad = _local_checkpoints(folders, run, seed, tokens_per_step, source)
        found += more
        incomplete += bad
    return found, incomplete


def _from_glob(
    pattern: str, name: tuple[str, int | None] | None, tokens_per_step: int | None, source: str
) -> tuple[list[Checkpoint], list[Incomplete]]:
    folders = [Path(p) for p in glob.glob(pattern) if Path(p).is_dir()]  # noqa: PTH207 (absolute patterns)
    if not folders:
        raise DiscoveryError(f"{source}: the glob matches no directory; fix: check the pattern (quote it in the shell)")
    found: list[Checkpoint] = []
    incomplete: list[Incomplete] = []
    by_parent: dict[Path, list[Path]] = {}
    for folder in folders:
        by_parent.setdefault(folder.parent, []).append(folder)
    for parent, members in by_parent.items():
        run, seed = name if name is not None else run_identity(parent)
        more, bad = _local_checkpoints(members, run, seed, tokens_per_step, source)
        found += more
        incomplete += bad
    return found, incomplete


# --------------------------------------------------------------------------------------------------
# Hub repositories


def hub_revisions(repo_id: str, pattern: str = DEFAULT_REVISION_PATTERN) -> list[tuple[str, int]]:
    """(revision, step) for every branch or tag of `repo_id` whose name matches `pattern` (step = group 1).

    Needs the hub; offline this raises huggingface_hub's error, which names the repository.
    """
    from huggingface_hub import HfApi

    refs = HfApi().list_repo_refs(repo_id)
    regex = re.compile(pattern)
    out = []
    for ref in [*refs.branches, *refs.tags]:
        match = regex.match(ref.name)
        if match:
            out.append((ref.name, int(match.group(1))))
    return sorted(set(out), key=lambda pair: pair[1])


def _from_hub(
    repo_id: str, name: tuple[str, int | None] | None, tokens_per_step: int | None, source: str, pattern: str
) -> list[Checkpoint]:
    revisions = hub_revisions(repo_id, pattern)
    if not revisions:
        raise DiscoveryError(
            f"{source}: no branch or tag of {repo_id} matches {pattern!r}; fix: pass --revision-pattern"
        )
    run, seed = name if name is not None else (repo_id.split("/")[-1], None)
    return [
        Checkpoint(run, seed, step, None if tokens_per_step is None else tokens_per_step * step, repo_id, revision)
        for revision, step in revisions
    ]


# --------------------------------------------------------------------------------------------------
# Entry point


@dataclass
class Discovery:
    """Every checkpoint found, and the folders that looked like checkpoints but cannot be evaluated."""

    checkpoints: list[Checkpoint]
    incomplete: list[Incomplete]


_PATH_LIKE_NAME = re.compile(r"^(?P<run>[^=]*[/\\][^=]*?)(?::\d+)?=(?P<source>.+)$")


def parse_source(source: str) -> tuple[tuple[str, int | None] | None, str]:
    """Split `NAME[:SEED]=WHERE` into ((name, seed), where); a plain source has no name. A NAME with a path
    separator (`../../evil=PATH`) is refused as a bad name when WHERE exists and the whole is not a path: a run name
    becomes a folder of the sweep store and must not climb out of it."""
    match = _NAMED.match(source)
    if match and not Path(source).exists():
        seed = match.group("seed")
        return (match.group("run"), None if seed is None else int(seed)), match.group("source")
    path_like = _PATH_LIKE_NAME.match(source)
    if path_like and not Path(source).exists() and Path(path_like.group("source")).exists():
        raise DiscoveryError(
            f"{source}: the run name {path_like.group('run')!r} holds a path separator; a run name is a plain name "
            "(it becomes a folder of the sweep store); fix: NAME=PATH with a name without '/' or '\\', "
            "e.g. mix-a=PATH"
        )
    return None, source


def discover(
    sources: Sequence[str],
    *,
    tokens_per_step: int | None = None,
    revision_pattern: str = DEFAULT_REVISION_PATTERN,
    steps: Iterable[int] | None = None,
    allow_incomplete: bool = False,
) -> Discovery:
    """All checkpoints of the given run sources, sorted by (run, seed, step).

    Raises `DiscoveryError` for a source without checkpoints, two sources giving the same (run, seed, step), and,
    unless `allow_incomplete`, for a checkpoint folder without config or weights (a crashed save, a copy in
    progress): evaluating it would fail later, or worse, evaluate something else.
    """
    found: list[Checkpoint] = []
    incomplete: list[Incomplete] = []
    for source in sources:
        name, where = parse_source(source)
        if where.startswith(HUB_PREFIX):
            found += _from_hub(where[len(HUB_PREFIX) :], name, tokens_per_step, source, revision_pattern)
        elif Path(where).is_dir():
            more, bad = _from_directory(Path(where), name, tokens_per_step, source)
            found += more
            incomplete += bad
        elif glob.has_magic(where):
            more, bad = _from_glob(where, name, tokens_per_step, source)
            found += more
            incomplete += bad
        else:
            raise DiscoveryError(
                f"{source}: not a directory, a glob or an hf://org/repo; fix: check the path (it does not exist)"
            )
    if incomplete and not allow_incomplete:
        listing = "; ".join(f"{item.path}: {item.reason}" for item in incomplete[:5])
        raise DiscoveryError(
            f"{len(incomplete)} checkpoint folder(s) cannot be evaluated: {listing}; "
            "fix: finish or delete them, or pass --skip-incomplete to evaluate the others"
        )
    found = _checked_names(found)
    _check_unique(found)
    if steps is not None:
        wanted = set(steps)
        found = [c for c in found if c.step in wanted]
    found.sort(key=lambda c: (c.run, -1 if c.seed is None else c.seed, c.step))
    return Discovery(found, incomplete)


def _checked_names(found: list[Checkpoint]) -> list[Checkpoint]:
    """Run names (given with NAME= or read from folder names) must be printable, and are taken in NFC
    (`analysis.base.names`): a folder copied from macOS names the same run in its decomposed form."""
    checked = []
    for checkpoint in found:
        problem = control_character_problem(checkpoint.run, "run name", f"checkpoint {checkpoint.path}")
        if problem:
            raise DiscoveryError(f"{problem} (or name the run with NAME[:SEED]=PATH)")
        checked.append(replace(checkpoint, run=nfc(checkpoint.run)))
    return checked


def _check_unique(found: list[Checkpoint]) -> None:
    seen: dict[tuple, Checkpoint] = {}
    for checkpoint in found:
        key = (checkpoint.run, checkpoint.seed, checkpoint.step)
        if key in seen:
            raise DiscoveryError(_two_checkpoints(seen[key], checkpoint))
        seen[key] = checkpoint


def _two_checkpoints(first: Checkpoint, second: Checkpoint) -> str:
    """Why two checkpoints have one identity, and the fix."""
    local = first.revision is None and second.revision is None
    if local and Path(first.path).resolve() == Path(second.path).resolve():
        return (
            f"the checkpoint folder {first.path} is given twice as {first.label} (through a symbolic link to it, or "
            "the same run source twice); fix: pass each run once, by one path"
        )
    message = f"two checkpoints are {first.label}: {first.path} and {second.path}"
    if local and nfc(first.path) == nfc(second.path):
        return (
            f"{message}; their paths are the same name in two Unicode forms (composed and decomposed, e.g. a run "
            "copied from macOS), which count as one name; fix: merge the two folders into one, or name the runs "
            "apart with NAME[:SEED]=PATH"
        )
    return f"{message}; fix: name the runs explicitly with NAME[:SEED]=PATH"

"""Every family loads from what its publisher serves, or says why not before any model loads.

For each dataset source of the suite, a LOCAL REPLICA of its repository as published on the Hugging Face Hub is
built under tmp_path from the rows the tests already have (hand-written hub rows in `tests/fixtures/hub_rows`, a
few rows per family in the published schema below, and real rows of ../shared/data for the families with a raw
release), in the hub form its `DatasetSource.hub_form` declares:

* ``configs``: a README whose YAML `configs:` list names each config's data files (TSV, CSV, JSON lines or parquet,
  at the paths and in the formats the cards and file trees in tests/fixtures name where they name them);
* ``parquet-branch``: `refs/convert/parquet` laid out `<config>/<split>/0000.parquet`, with no README
  (MAFAND-MT, XL-Sum);
* ``script``: a repository holding only a loading script and a card (NollySenti at its pin).

The seam: huggingface_hub's HTTP client. huggingface_hub makes every request (its own API calls, the file
downloads of `hf_hub_download`, `HfFileSystem`'s listings) through `get_session()`, and `datasets` 5 uses the same
session for its own calls (`cached_path`, the dataset viewer API), so `huggingface_hub.set_client_factory` with an
`httpx.MockTransport` that answers the Hub's REST routes from the replica swaps exactly the network and nothing
else: lighteval's `download_dataset_worker`, the suite's loader, `datasets.load_dataset`'s module resolution for a
hub repository (README card, script check, data-file patterns, builder configs), `huggingface_hub`'s cache and the
parquet / json / csv builders all run as they do against huggingface.co. The routes served are the ones datasets
and huggingface_hub call: `GET /api/datasets/<repo>/revision/<rev>` (repo info and the commit a branch points at),
`GET /api/datasets/<repo>/tree/<rev>/<path>` (listings), `POST .../paths-info/<rev>`, and `HEAD`/`GET
/datasets/<repo>/resolve/<rev>/<file>` (downloads, with the `X-Repo-Commit` and `ETag` headers the hub sends, and
the hub's `X-Error-Code` on a missing entry, revision or repository). Requests to any other host (the dataset
viewer, the legacy S3 bucket datasets probes for scripts) get a 404, as an unreachable optional service would; a
route the replica does not know fails the test (huggingface_hub's optional agent registry, `/api/agent-harnesses`,
gets a 404 too). Offline mode is switched off for the test only (the transport never opens a socket), and every
cache lives under tmp_path.

What each test proves: a task of every family (one config each) yields, through that path, exactly the documents its
prompt function makes of the rows written (parquet branches: read from that config's folder only); datasets 5 sees
a parquet branch as one `default` config and refuses a loading script (the failures the hub forms exist for);
`data mirror` reads a parquet branch config by config; a script-only source is refused by name, with the raw-release
alternative, before any hub request, by a task, by `data mirror` and in a sweep's data check, and loads from its
mirror; and the known quirks (Uhura-TruthfulQA's English files at the pin, AfriHate's `Offensive`, SALT's columns).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

import datasets
import httpx
import huggingface_hub
import pytest
import yaml
from huggingface_hub import constants as hub_constants
from huggingface_hub.utils import _http as hub_http

from tests.hub_rows import hub_rows, write_hub_row_mirror

Rows = list[dict[str, Any]]
HUB_HOST = "huggingface.co"


# ------------------------------------------------------------------------------------------ the replica hub


@dataclass
class Snapshot:
    """One revision of a replica repository: the commit it resolves to and the folder holding its files."""

    sha: str
    root: Path

    def files(self) -> list[str]:
        return sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file())


@dataclass
class ReplicaHub:
    """An `httpx` transport handler answering the Hub's dataset routes from local folders (module docstring)."""

    repos: dict[str, dict[str, Snapshot]] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)

    def add(self, repo_id: str, revision: str, root: Path) -> str:
        """Serve `root` as `repo_id` at `revision` (a branch or ref name, or a full commit id); returns its commit."""
        if len(revision) == 40 and all(c in "0123456789abcdef" for c in revision):
            sha = revision
        else:  # unique per replica, so no cache keyed by commit (datasets', HfFileSystem's) outlives a test
            sha = hashlib.sha1(f"{repo_id}@{revision}:{uuid.uuid4()}".encode()).hexdigest()
        self.repos.setdefault(repo_id, {})[revision] = Snapshot(sha, root)
        return sha

    def requested(self, repo_id: str) -> list[str]:
        return [line for line in self.requests if f"/{repo_id}/" in line]

    def _snapshot(self, repo_id: str, revision: str) -> Snapshot | httpx.Response:
        if repo_id not in self.repos:
            return httpx.Response(401, headers={"X-Error-Code": "RepoNotFound"}, json={"error": "Repository not found"})
        for name, snapshot in self.repos[repo_id].items():
            if revision in (name, snapshot.sha):
                return snapshot
        return httpx.Response(404, headers={"X-Error-Code": "RevisionNotFound"}, json={"error": "Invalid rev id"})

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(f"{request.method} {request.url}")
        if request.url.host != HUB_HOST:
            return httpx.Response(404, json={"error": f"{request.url.host} is not served by the replica"})
        parts = [unquote(part) for part in request.url.raw_path.decode().split("?")[0].strip("/").split("/")]
        if parts[:2] == ["api", "datasets"] and len(parts) >= 6:
            return self._api(request, "/".join(parts[2:4]), parts[4], parts[5], "/".join(parts[6:]))
        if parts[:1] == ["datasets"] and len(parts) >= 6 and parts[3] == "resolve":
            return self._resolve(request, "/".join(parts[1:3]), parts[4], "/".join(parts[5:]))
        if parts[:2] == ["api", "agent-harnesses"]:  # huggingface_hub's user-agent registry: optional, errors ignored
            return httpx.Response(404, json={"error": "not served by the replica"})
        self.unexpected.append(f"{request.method} {request.url}")
        return httpx.Response(400, json={"error": "route not served by the replica"})

    @staticmethod
    def _entry(snapshot: Snapshot, path: str) -> dict[str, Any]:
        target = snapshot.root / path
        if target.is_dir():
            return {"type": "directory", "oid": hashlib.sha1(path.encode()).hexdigest(), "path": path}
        data = target.read_bytes()
        return {"type": "file", "oid": hashlib.sha1(data).hexdigest(), "size": len(data), "path": path}

    def _api(self, request: httpx.Request, repo_id: str, route: str, revision: str, path: str) -> httpx.Response:
        snapshot = self._snapshot(repo_id, revision)
        if isinstance(snapshot, httpx.Response):
            return snapshot
        if route == "revision":
            siblings = [{"rfilename": name} for name in snapshot.files()]
            return httpx.Response(200, json={"id": repo_id, "sha": snapshot.sha, "private": False, "gated": False,
                                             "disabled": False, "siblings": siblings, "tags": []})  # fmt: skip
        if route == "tree":
            base = snapshot.root / path
            if not base.is_dir():
                return httpx.Response(404, headers={"X-Error-Code": "EntryNotFound"}, json={"error": "no such path"})
            recursive = parse_qs(request.url.query.decode()).get("recursive", ["false"])[0].lower() == "true"
            found = sorted(base.rglob("*") if recursive else base.iterdir())
            return httpx.Response(
                200, json=[self._entry(snapshot, p.relative_to(snapshot.root).as_posix()) for p in found]
            )
        if route == "paths-info":
            paths = parse_qs(request.content.decode()).get("paths", [])
            return httpx.Response(200, json=[self._entry(snapshot, p) for p in paths if (snapshot.root / p).exists()])
        self.unexpected.append(f"{request.method} {request.url}")
        return httpx.Response(400, json={"error": "API route not served by the replica"})

    def _resolve(self, request: httpx.Request, repo_id: str, revision: str, path: str) -> httpx.Response:
        snapshot = self._snapshot(repo_id, revision)
        if isinstance(snapshot, httpx.Response):
            return snapshot
        target = snapshot.root / path
        if not target.is_file():
            return httpx.Response(404, headers={"X-Error-Code": "EntryNotFound", "X-Repo-Commit": snapshot.sha},
                                  json={"error": "Entry not found"})  # fmt: skip
        data = target.read_bytes()
        headers = {"X-Repo-Commit": snapshot.sha, "ETag": f'"{hashlib.sha1(data).hexdigest()}"'}
        if request.method == "HEAD":
            return httpx.Response(200, headers=headers | {"Content-Length": str(len(data))})
        if request.headers.get("Range", "").startswith("bytes="):
            start, _, end = request.headers["Range"][len("bytes=") :].partition("-")
            chunk = data[int(start) : (int(end) + 1 if end else len(data))]
            return httpx.Response(206, headers=headers, content=chunk)
        return httpx.Response(200, headers=headers, content=data)


@pytest.fixture
def replica(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ReplicaHub]:
    """The replica hub in place of huggingface.co for one test: online mode on, every cache under tmp_path, no
    mirror configured (tasks name the hub, as on a machine with hub access)."""
    from finetasks_afr.data.sources import DATA_DIR_ENV

    hub = ReplicaHub()
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", False)
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "datasets-cache")
    monkeypatch.setattr(datasets.config, "DOWNLOADED_DATASETS_PATH", tmp_path / "datasets-cache" / "downloads")

    def client() -> httpx.Client:
        return httpx.Client(
            transport=httpx.MockTransport(hub),
            event_hooks={"request": [hub_http.hf_request_event_hook]},  # the default client's hook, kept
            follow_redirects=True,
        )

    huggingface_hub.set_client_factory(client)
    try:
        yield hub
    finally:
        huggingface_hub.set_client_factory(hub_http.default_client_factory)
        huggingface_hub.HfFileSystem.clear_instance_cache()
    assert not hub.unexpected, f"routes the replica does not serve were requested: {hub.unexpected}"


# ------------------------------------------------------------------------------------------ writing replicas


def write_rows(path: Path, rows: Rows) -> None:
    """`rows` as the file `path` in the format of its extension (what datasets infers its builder from)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        datasets.Dataset.from_list(rows).to_parquet(str(path))
    elif path.suffix in (".json", ".jsonl"):  # JSON lines (datasets' json builder reads both kinds of file)
        path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    elif path.suffix in (".csv", ".tsv"):
        columns = list(dict.fromkeys(name for row in rows for name in row))
        text = io.StringIO()
        writer = csv.DictWriter(text, columns, delimiter="\t" if path.suffix == ".tsv" else ",", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        path.write_text(text.getvalue(), encoding="utf-8")
    else:
        raise ValueError(f"no writer for {path.suffix}")


def configs_repo(root: Path, files: Mapping[str, Mapping[str, tuple[str, Rows | None]]], card: str = "") -> Path:
    """A repository whose README YAML `configs:` lists, per config and split, a data file: {config: {split: (path
    in the repository, rows)}}; a path listed but given rows None is listed in the card and not written."""
    root.mkdir(parents=True, exist_ok=True)
    entries = []
    for config, splits in files.items():
        for path, rows in splits.values():
            if rows is not None:
                write_rows(root / path, rows)
        data_files = [{"split": split, "path": path} for split, (path, _) in splits.items()]
        entries.append({"config_name": config, "data_files": data_files})
    front = yaml.safe_dump({"configs": entries}, sort_keys=False, allow_unicode=True)
    (root / "README.md").write_text(f"---\n{front}---\n{card}\n", encoding="utf-8")
    return root


def parquet_branch(root: Path, configs: Mapping[str, Mapping[str, Rows]]) -> Path:
    """The hub's parquet conversion: `<config>/<split>/0000.parquet` and a `.gitattributes`, no README."""
    for config, splits in configs.items():
        for split, rows in splits.items():
            write_rows(root / config / split / "0000.parquet", rows)
    (root / ".gitattributes").write_text("*.parquet filter=lfs diff=lfs merge=lfs -text\n", encoding="utf-8")
    return root


def script_repo(root: Path, script: str, card: str) -> Path:
    """A repository of a loading script and its card (no `configs:` YAML, no data files)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / script).write_text("import datasets\n\n\nclass Loader(datasets.GeneratorBasedBuilder):\n    pass\n")
    (root / "README.md").write_text(card, encoding="utf-8")
    return root


# ---------------------------------------------------------------------------------------- per-family layouts


@dataclass(frozen=True)
class Published:
    """How a source is published (its hub form) and, for README-configs repositories, where a config's split lives
    (`{config}`, `{split}` and `{file_split}` = the split's file name per `file_splits`), and which config the
    test reads. `rows`: "hub_rows" (tests/fixtures/hub_rows), "raw" (../shared/data via the raw importer) or
    "hand" (:data:`HAND_ROWS`)."""

    form: str
    config: str
    path: str = "{config}/{split}-00000-of-00001.parquet"  # push_to_hub's layout, where the card names none
    file_splits: tuple[tuple[str, str], ...] = ()
    rows: str = "hub_rows"
    note: str = ""


PUBLISHED: dict[str, Published] = {
    "afridiacritics": Published("configs", "yor", "diacritics/{file_split}/{config}.tsv",
                                (("dev", "validation"),), note="card d23261cf: diacritics/<split>/<xx>.tsv"),
    "afrihate": Published("configs", "hau", "data/{config}/{split}.tsv", note="data files (tsv), coverage notes"),
    "afrimgsm": Published("configs", "yor", rows="hand"),
    "afrimmlu": Published("configs", "yor", rows="hand", note="refs/pr/1: hynky's parquet configs <lang>/<split>-*"),
    "afriqa": Published("configs", "hau", rows="raw"),
    "afrisenti": Published("configs", "hau", "data/{config}/{file_split}.tsv", (("validation", "dev"),), rows="raw",
                           note="main: data/<lang>/{train,dev,test}.tsv"),
    "afrixnli": Published("configs", "yor", rows="hand"),
    "belebele": Published("configs", "ibo_Latn", "data/{config}.jsonl", rows="raw",
                          note="refs/pr/6 card: data/<lang>.jsonl, split test"),
    "global_mmlu": Published("configs", "yo"),
    "injongointent": Published("configs", "hau", "{config}/{split}.jsonl", note="data files (jsonl)"),
    "mafand": Published("parquet-branch", "en-hau"),
    "masakhanews": Published("configs", "hau", rows="raw"),
    "mmlu_clinical_afr": Published("configs", "mmlu_clinical_knowledge_ig",
                                   "mmlu_clinical_knowledge/clinical_knowledge_{split}_ig.csv", rows="raw",
                                   note="card ffb0cc0: one CSV per split"),
    "mmlu_en": Published("configs", "clinical_knowledge", rows="raw"),
    "naijarc": Published("configs", "yor", rows="hand"),
    "nollysenti": Published("script", "ha", note="af58a542: nollysenti.py and README.md only"),
    "ntrex": Published("configs", "hau_Latn"),
    "openai_mmmlu": Published("configs", "YO_NG", "test/mmlu_YO-NG.csv", note="data files (csv)"),
    "salt": Published("configs", "text-all"),
    "sib200": Published("configs", "hau_Latn", "data/{config}/{file_split}.tsv", (("validation", "dev"),), rows="raw",
                        note="main: data/<lang>/{train,dev,test}.tsv"),
    "uhura_arc_easy": Published("configs", "yo_multiple_choice", "{config}_{split}.json", rows="hand"),
    "uhura_truthfulqa": Published("configs", "en_multiple_choice", "{config}_{split}.json",
                                  note="1867a89: <xx>_multiple_choice_<split>.json, English .jsonl, card lists .json"),
    "winogrande_afr": Published("configs", "winogrande_ig", "winogrande/winogrande_{split}_ig.csv", rows="raw",
                                note="card ffb0cc0: a CSV per split; hub columns qID Sentence Option1 Option2 Answer"),
    "xlsum": Published("parquet-branch", "hausa"),
}  # fmt: skip

# A few rows per hub-only family without a hub_rows fixture, in the published schema of
# ../shared/notes/hub-datasets.md (which cites lm-evaluation-harness and lighteval); written by hand.
_ARC = {
    "question": "Kí ni ohun ọ̀gbìn nílò láti dàgbà?",
    "answerKey": "A",
    "choices": {"text": ["Ìmọ́lẹ̀ oòrùn", "Iyanrìn", "Òkúta", "Irin"], "label": ["A", "B", "C", "D"]},
}
HAND_ROWS: dict[str, dict[str, Rows]] = {
    "afrimmlu": {  # question, choices (a Python-list string), answer (a letter), subject; refs/pr/1: dev and test
        "dev": [{"subject": "elementary_mathematics", "question": "Kínni 2 + 2?",
                 "choices": "['3', '4', '5', '6']", "answer": "B"}],
        "test": [{"subject": "elementary_mathematics", "question": "Kínni iyì p nínú 24 = 2p?",
                  "choices": "['p = 4', 'p = 8', 'p = 12', 'p = 24']", "answer": "C"},
                 {"subject": "global_facts", "question": "Ọjọ́ mélòó ló wà nínú ọ̀sẹ̀ kan?",
                  "choices": "['5', '6', '7', '8']", "answer": "C"}],
    },
    "afrixnli": {  # premise, hypothesis, label (0 entailment, 1 neutral, 2 contradiction)
        "validation": [{"premise": "Ọmọ náà ń sùn.", "hypothesis": "Ọmọ náà ń sáré.", "label": 2}],
        "test": [{"premise": "Ọmọ náà ń sùn lórí ibùsùn.", "hypothesis": "Ọmọ kan wà lórí ibùsùn.", "label": 0},
                 {"premise": "Adé ra ìwé méjì.", "hypothesis": "Adé ka ìwé náà.", "label": 1}],
    },
    "afrimgsm": {  # question, answer (None on test), answer_number, equation_solution
        "train": [{"question": "Question: Olú ní ẹyin méjì, ó ra mẹ́ta sí i. Ẹyin mélòó ni ó ní?",
                   "answer": "Step-by-Step Answer: 2 + 3 = 5. The answer is 5.", "answer_number": 5,
                   "equation_solution": "2 + 3 = 5"}],
        "test": [{"question": "Ade ní ọsàn mẹ́ta, ó ra méjì sí i. Ọsàn mélòó ni ó ní?", "answer": None,
                  "answer_number": 5, "equation_solution": None},
                 {"question": "Bọ́ọ̀lù mẹ́fà wà, méjì sọnù. Mélòó ló kù?", "answer": None, "answer_number": 4,
                  "equation_solution": None}],
    },
    "naijarc": {  # story, question, options_A..D, Answer (a letter, possibly padded); test only
        "test": [{"story": "Adé lọ sí ọjà ní àárọ̀. Ó ra iṣu méjì.", "question": "Kí ni Adé rà?",
                  "options_A": "Iṣu", "options_B": "Ẹja", "options_C": "Ata", "options_D": "Ìrẹsì", "Answer": " A "},
                 {"story": "Bọ́lá ń kàwé ní ilé ìwé.", "question": "Níbo ni Bọ́lá wà?", "options_A": "Ọjà",
                  "options_B": "Ilé ìwé", "options_C": "Oko", "options_D": "Ilé", "Answer": "B"}],
    },
    "uhura_arc_easy": {  # ARC schema: question, choices {text, label}, answerKey
        "train": [_ARC | {"id": "t-1"}],
        "validation": [_ARC | {"id": "v-1", "question": "Kí ni ẹja nílò láti gbé?"}],
        "test": [_ARC | {"id": "e-1"}, _ARC | {"id": "e-2", "answerKey": "B",
                                              "question": "Kí ni a fi ń kọ́ ilé?"}],
    },
}  # fmt: skip
RAW_KEYS = tuple(sorted(key for key, published in PUBLISHED.items() if published.rows == "raw"))
ROWS_PER_SPLIT = 40


@pytest.fixture(scope="module")
def raw_mirror(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The chosen config of every raw-backed family, imported from ../shared/data (real rows, hub schema)."""
    from finetasks_afr.data.mirror import import_raw

    out = tmp_path_factory.mktemp("raw-mirror")
    import_raw(shared_data, out, datasets=list(RAW_KEYS), configs=[PUBLISHED[key].config for key in RAW_KEYS])
    return out


def _mirror_rows(folder: Path, config: str) -> dict[str, Rows]:
    front = yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---")[1])
    (entry,) = [entry for entry in front["configs"] if entry["config_name"] == config]
    rows = {}
    for data_file in entry["data_files"]:
        lines = (folder / data_file["path"]).read_text(encoding="utf-8").splitlines()
        rows[data_file["split"]] = [json.loads(line) for line in lines[:ROWS_PER_SPLIT]]
    return rows


def _hub_winogrande_row(row: dict[str, Any]) -> dict[str, Any]:
    """A raw-release Winogrande row in the hub's columns (card ffb0cc0: qID, Sentence, Option1, Option2, Answer;
    the English columns and Split dropped, as the publisher's create_parquet_ready_release.py does)."""
    (name,) = [key[: -len(" Sentence")] for key in row if key.endswith(" Sentence") and not key.startswith("English")]
    return {"qID": row["qID"], "Sentence": row[f"{name} Sentence"], "Option1": row[f"{name} Option 1"],
            "Option2": row[f"{name} Option 2"], "Answer": int(row["Answer"])}  # fmt: skip


def family_rows(key: str, request: pytest.FixtureRequest) -> dict[str, Rows]:
    """split -> rows of the config the test reads, in the published schema."""
    published = PUBLISHED[key]
    if published.rows == "hand":
        return HAND_ROWS[key]
    if published.rows == "hub_rows":
        return hub_rows(key)["configs"][published.config]
    rows = _mirror_rows(request.getfixturevalue("raw_mirror") / key, published.config)
    if key == "winogrande_afr":
        rows = {split: [_hub_winogrande_row(row) for row in split_rows] for split, split_rows in rows.items()}
    return rows


def publish(hub: ReplicaHub, key: str, rows: dict[str, Rows], root: Path) -> Path:
    """Build the replica of source `key` (its declared form) holding `rows` for the config the test reads."""
    from finetasks_afr.data.sources import SOURCES

    src, published = SOURCES[key], PUBLISHED[key]
    config = published.config
    if published.form == "parquet-branch":
        parquet_branch(root, {config: rows})
    elif published.form == "script":
        script_repo(root, f"{src.hub_repo.split('/')[1]}.py", f"---\nlicense: cc-by-4.0\n---\n# {src.hub_repo}\n")
    elif key == "uhura_truthfulqa":  # the pinned commit: English files are .jsonl, the card lists .json for all
        others = hub_rows(key)["configs"]  # the other languages' files hold their fixture rows (else Swahili's)
        card: dict[str, dict[str, tuple[str, Rows | None]]] = {
            cfg: {
                split: (
                    f"{cfg}_{split}.json",
                    None if cfg == config else others.get(cfg, others["sw_multiple_choice"])[split],
                )
                for split in src.splits
            }
            for cfg in src.config_names
        }
        configs_repo(root, card)
        for split, split_rows in rows.items():
            write_rows(root / f"{config}_{split}.jsonl", split_rows)
    else:
        file_splits = dict(published.file_splits)
        layout = {
            split: (published.path.format(config=config, split=split, file_split=file_splits.get(split, split)), r)
            for split, r in rows.items()
        }
        configs_repo(root, {config: layout})
    hub.add(src.hub_repo, src.revision or "main", root)
    return root


# ---------------------------------------------------------------------------------------------- loading tasks


@pytest.fixture(scope="module")
def literals() -> None:
    from finetasks_afr.prompts.literals import register_literals

    register_literals()


def family_task(key: str, config: str) -> Any:
    """The first task of the suite that reads config `config` of source `key`, built now (no mirror: the hub)."""
    from finetasks_afr.benchmarks import benchmark_modules
    from finetasks_afr.benchmarks.common import TASK_INFO

    for module in benchmark_modules():
        if any(src.key == key for src in getattr(module, "SOURCES", ())):
            for task in module.tasks():
                if TASK_INFO[task.name].dataset == key and task.hf_subset == config:
                    return task
    raise AssertionError(f"no task reads config {config!r} of {key!r}")


def doc_key(doc: Any) -> tuple[Any, ...]:
    gold = doc.gold_index if isinstance(doc.gold_index, list) else [doc.gold_index]
    return doc.query, tuple(doc.choices), tuple(gold)


def expected_docs(config: Any, rows: dict[str, Rows]) -> list[tuple[Any, ...]]:
    """The documents the task's prompt function makes of the rows written, in order (rows it skips left out)."""
    docs = []
    for split in config.evaluation_splits:
        for row in rows.get(split, []):
            doc = config.prompt_function(dict(row), config.name)
            if doc is not None:
                docs.append(doc_key(doc))
    return docs


def load_documents(config: Any) -> tuple[list[Any], Any]:
    """lighteval's own path: a LightevalTask from the config, its evaluation documents (download_dataset_worker ->
    load_dataset -> datasets -> huggingface_hub -> the replica)."""
    from lighteval.tasks.lighteval_task import LightevalTask

    task = LightevalTask(config)
    return task.eval_docs(), task


# -------------------------------------------------------------------------------------------------- tests


def test_every_source_has_a_replica_of_its_declared_form() -> None:
    """A source added without a replica here, or declared in another form than its replica, fails."""
    from finetasks_afr.data.sources import PARQUET_BRANCH_REVISION, SOURCES

    assert set(PUBLISHED) == set(SOURCES)
    for key, published in PUBLISHED.items():
        src = SOURCES[key]
        assert src.hub_form == published.form, key
        if src.hub_form == "parquet-branch":
            assert src.revision == PARQUET_BRANCH_REVISION, key
        if src.hub_form == "script":
            assert src.raw is not None or src.raw_release, f"{key}: a script-only source needs a raw release"
    assert {key for key, src in SOURCES.items() if src.hub_form == "parquet-branch"} == {"mafand", "xlsum"}
    assert {key for key, src in SOURCES.items() if src.hub_form == "script"} == {"nollysenti"}


@pytest.mark.parametrize(
    "key",
    [
        pytest.param(key, marks=[pytest.mark.shared_data] if published.rows == "raw" else [])
        for key, published in sorted(PUBLISHED.items())
        if published.form != "script"
    ],
)
@pytest.mark.slow
def test_family_loads_real_documents_from_a_replica_of_its_published_layout(
    key: str, replica: ReplicaHub, tmp_path: Path, request: pytest.FixtureRequest, literals: None
) -> None:
    from finetasks_afr.data.sources import SOURCES

    published, src = PUBLISHED[key], SOURCES[key]
    rows = family_rows(key, request)
    publish(replica, key, rows, tmp_path / "published")
    config = family_task(key, published.config)
    assert (config.hf_repo, config.hf_revision) == (src.hub_repo, src.revision)  # the hub, as published

    docs, task = load_documents(config)

    expected = expected_docs(config, rows)
    assert expected, f"{key}: no row of {published.config} makes a document"
    assert [doc_key(doc) for doc in docs] == expected  # every row written, as the prompt function reads it
    splits = [*config.evaluation_splits, *([config.few_shots_split] if config.few_shots_split else [])]
    assert set(splits) <= set(task.dataset), (key, splits, list(task.dataset))
    assert replica.requested(src.hub_repo), f"{key}: nothing was read from the replica"
    if published.form == "parquet-branch":
        read = [line for line in replica.requested(src.hub_repo) if "/resolve/" in line and ".parquet" in line]
        assert read and all(f"/{published.config}/" in line for line in read)  # that config's folder only


def test_a_parquet_branch_is_one_default_config_to_datasets_so_tasks_read_a_config_folder(
    replica: ReplicaHub, tmp_path: Path
) -> None:
    """Why parquet-branch sources are read with data_dir: by config name datasets 5 finds only `default`."""
    from finetasks_afr.benchmarks import xlsum
    from finetasks_afr.data.sources import load_arguments, load_dataset

    # the repository at its pin is a loading script, which datasets refuses (asked first: once anything of the
    # repository is in datasets' cache, the refusal is replaced by a fall-back to that cache)
    script_repo(tmp_path / "script", "xlsum.py", "---\nlicense: cc-by-nc-sa-4.0\n---\n")
    replica.add("csebuetnlp/xlsum", xlsum.SCRIPT_REVISION, tmp_path / "script")
    with pytest.raises(RuntimeError, match=re.escape("Dataset scripts are no longer supported, but found xlsum.py")):
        datasets.load_dataset("csebuetnlp/xlsum", "hausa", revision=xlsum.SCRIPT_REVISION)
    # its parquet conversion
    rows = hub_rows("xlsum")["configs"]
    parquet_branch(tmp_path / "branch", rows)
    replica.add("csebuetnlp/xlsum", "refs/convert/parquet", tmp_path / "branch")
    with pytest.raises(ValueError, match=re.escape("BuilderConfig 'hausa' not found. Available: ['default']")):
        datasets.load_dataset("csebuetnlp/xlsum", "hausa", revision="refs/convert/parquet")
    assert load_arguments("csebuetnlp/xlsum", "hausa", "refs/convert/parquet") == {
        "path": "csebuetnlp/xlsum", "revision": "refs/convert/parquet", "data_dir": "hausa"}  # fmt: skip
    for config in rows:
        loaded = load_dataset("csebuetnlp/xlsum", config, "refs/convert/parquet")
        assert {split: loaded[split]["id"] for split in loaded} == {
            split: [row["id"] for row in split_rows] for split, split_rows in rows[config].items()
        }


def test_data_mirror_reads_a_parquet_branch_config_by_config_and_tasks_then_read_the_mirror(
    replica: ReplicaHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, literals: None
) -> None:
    import finetasks_afr.data.mirror as mirror_mod
    from finetasks_afr.data.sources import DATA_DIR_ENV, mirror_configs

    rows = hub_rows("mafand")["configs"]
    parquet_branch(tmp_path / "branch", rows)
    replica.add("masakhane/mafand", "refs/convert/parquet", tmp_path / "branch")
    monkeypatch.setattr(mirror_mod, "_check_hub_reachable", lambda: None)  # the socket probe; the replica is in-process
    report = mirror_mod.mirror_from_hub(tmp_path / "mirror", datasets=["mafand"])
    assert not report.errors, report.errors
    assert mirror_configs(tmp_path / "mirror" / "mafand") == set(rows)
    assert report.rows("mafand") == sum(len(r) for splits in rows.values() for r in splits.values())

    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "mirror"))
    config = family_task("mafand", "en-amh")
    assert config.hf_repo == str(tmp_path / "mirror" / "mafand")
    docs, _ = load_documents(config)
    assert [doc_key(doc) for doc in docs] == expected_docs(config, rows["en-amh"])


# ------------------------------------------------------------------------------- a script-only repository


NOLLYSENTI_CARD = "---\nlicense: afl-3.0\n---\n# NollySenti\n"


def test_a_script_only_repository_is_refused_by_name_before_any_hub_request(
    replica: ReplicaHub, tmp_path: Path, literals: None
) -> None:
    from lighteval.tasks.lighteval_task import LightevalTask

    from finetasks_afr.benchmarks import nollysenti
    from finetasks_afr.data.sources import ScriptOnlyDatasetError

    (src,) = nollysenti.SOURCES
    publish(replica, "nollysenti", {}, tmp_path / "published")
    config = family_task("nollysenti", "ha")
    assert (config.hf_repo, config.hf_revision) == (src.hub_repo, src.revision)
    task = LightevalTask(config)
    with pytest.raises(ScriptOnlyDatasetError) as refused:
        LightevalTask.load_datasets({config.name: task})  # what lighteval's Pipeline does before it loads a model
    message = str(refused.value)
    for part in ("Davlan/nollysenti@af58a542", "loading script", "datasets >= 4", "finetasks-afr data import-raw",
                 "-d nollysenti", "IyanuSh/NollySenti", "CC-BY-4.0", "FINETASKS_AFR_DATA_DIR"):  # fmt: skip
        assert part in message, (part, message)
    assert not replica.requests  # refused before the hub is asked anything

    # what the refusal stands in for: datasets itself, asked for the replica, refuses the script mid-load
    with pytest.raises(
        RuntimeError, match=re.escape("Dataset scripts are no longer supported, but found nollysenti.py")
    ):
        datasets.load_dataset(src.hub_repo, "ha", revision=src.revision)


def test_a_script_only_source_loads_from_its_mirror(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, literals: None
) -> None:
    from finetasks_afr.data.sources import DATA_DIR_ENV

    write_hub_row_mirror(tmp_path / "mirror", ["nollysenti"])
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "mirror"))
    config = family_task("nollysenti", "ha")
    assert config.hf_repo == str(tmp_path / "mirror" / "nollysenti") and config.hf_revision is None
    docs, _ = load_documents(config)
    assert [doc_key(doc) for doc in docs] == expected_docs(config, hub_rows("nollysenti")["configs"]["ha"])


def test_data_mirror_refuses_a_script_only_source_by_name_without_the_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    import finetasks_afr.data.mirror as mirror_mod
    from finetasks_afr.cli.data import data_app

    def unreachable() -> None:
        raise AssertionError("the hub was probed for a script-only source")

    monkeypatch.setattr(mirror_mod, "_check_hub_reachable", unreachable)
    report = mirror_mod.mirror_from_hub(tmp_path / "mirror", datasets=["nollysenti"])
    assert len(report.errors) == 1 and "finetasks-afr data import-raw" in report.errors[0]
    assert "-d nollysenti" in report.errors[0] and not (tmp_path / "mirror").exists()
    result = CliRunner().invoke(data_app, ["mirror", "--out", str(tmp_path / "mirror"), "-d", "nollysenti"])
    assert result.exit_code == 1 and "import-raw" in result.output and "nollysenti" in result.output


# ---------------------------------------------------------------------------------------------- known quirks


def test_uhura_truthfulqa_english_loads_at_the_pin_whose_card_lists_json_for_jsonl_files(
    replica: ReplicaHub, tmp_path: Path, literals: None
) -> None:
    """The replica of 1867a89: English files `.jsonl`, the card's `configs:` listing `.json` for every language."""
    from finetasks_afr.benchmarks import uhura_truthfulqa

    fixture = hub_rows("uhura_truthfulqa")["configs"]
    publish(replica, "uhura_truthfulqa", fixture["en_multiple_choice"], tmp_path / "published")
    with pytest.raises(FileNotFoundError, match=re.escape("en_multiple_choice_train.json")):  # the card as published
        datasets.load_dataset(uhura_truthfulqa.HUB_REPO, "en_multiple_choice", revision=uhura_truthfulqa.REVISION)
    for config_name in ("en_multiple_choice", "sw_multiple_choice"):
        config = family_task("uhura_truthfulqa", config_name)
        docs, _ = load_documents(config)
        assert [doc_key(doc) for doc in docs] == expected_docs(config, fixture[config_name]), config_name


def test_uhura_truthfulqa_licence_is_flagged_possibly_non_commercial() -> None:
    from finetasks_afr.benchmarks import uhura_truthfulqa

    (src,) = uhura_truthfulqa.SOURCES
    assert "NON-COMMERCIAL" in src.notes and "cc-by-nc-4.0" in src.notes
    assert "NON-COMMERCIAL" in (uhura_truthfulqa.__doc__ or "")


def test_afrihate_reads_the_shared_task_offensive_class_as_abuse(
    replica: ReplicaHub, tmp_path: Path, literals: None
) -> None:
    from finetasks_afr.benchmarks import afrihate

    assert [afrihate.adapter({"tweet": "t", "label": label})["gold_idx"]
            for label in ("Hate", "Offensive", " OFFENSIVE ", "Abuse", "Normal")] == [0, 1, 1, 1, 2]  # fmt: skip
    assert "Offensive" in (afrihate.__doc__ or "") and "Offensive as Abuse" in afrihate.SOURCES[0].notes
    # rows of the shared-task release (Hate / Offensive / Normal) through the hub path: none is skipped
    rows = {
        "train": [{"tweet": f"Tweet {i} na horo.", "label": label} for i, label in enumerate(("Hate", "Offensive",
                                                                                             "Normal") * 2)],
        "test": [{"tweet": "Wannan magana ce mai zagi.", "label": "Offensive"},
                 {"tweet": "Barka da safiya.", "label": "Normal"}],
    }  # fmt: skip
    publish(replica, "afrihate", rows, tmp_path / "published")
    config = family_task("afrihate", "hau")
    docs, _ = load_documents(config)
    assert len(docs) == 2 and [doc_key(doc)[2] for doc in docs] == [(1,), (2,)]
    assert docs[0].choices[1].strip().lower() == "abuse"


def _salt_rows(drop: str | None = None, rename: tuple[str, str] | None = None) -> dict[str, Rows]:
    def edit(row: dict[str, Any]) -> dict[str, Any]:
        row = {name: value for name, value in row.items() if name != drop}
        if rename:
            row[rename[1]] = row.pop(rename[0])
        return row

    return {split: [edit(row) for row in rows] for split, rows in hub_rows("salt")["configs"]["text-all"].items()}


@pytest.mark.parametrize(
    ("change", "missing"),
    [({"rename": ("eng_source_text", "eng_text")}, "eng_source_text"), ({"drop": "lug_text"}, "lug_text")],
)
def test_salt_refuses_by_name_a_revision_without_the_columns_it_reads(
    change: dict[str, Any], missing: str, replica: ReplicaHub, tmp_path: Path, literals: None
) -> None:
    from finetasks_afr.benchmarks.salt import SaltColumnsError

    publish(replica, "salt", _salt_rows(**change), tmp_path / "published")
    from finetasks_afr.benchmarks.common import TASK_INFO

    config = next(
        task for task in family_task_list("salt") if TASK_INFO[task.name].language == "lug" and "en2xx" in task.name
    )
    with pytest.raises(SaltColumnsError) as refused:
        load_documents(config)
    message = str(refused.value)
    assert repr(missing) in message and "Sunbird/salt (unpinned)" in message and "DatasetSource.revision" in message


def family_task_list(key: str) -> list[Any]:
    from finetasks_afr.benchmarks import benchmark_modules
    from finetasks_afr.benchmarks.common import TASK_INFO

    (module,) = [m for m in benchmark_modules() if any(src.key == key for src in getattr(m, "SOURCES", ()))]
    return [task for task in module.tasks() if TASK_INFO[task.name].dataset == key]


def test_a_sweep_without_a_mirror_names_the_script_only_tasks_before_any_model_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep checks every task's data before it loads a checkpoint: a NollySenti task without a mirror is
    reported with the refusal's message (the rest of the checkpoint's tasks are evaluated), not a datasets
    traceback mid-sweep."""
    from finetasks_afr.data.sources import DATA_DIR_ENV
    from finetasks_afr.sweep.evaluate import Evaluator, SweepSpec

    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    evaluator = Evaluator(SweepSpec(tasks=["nollysenti_hau_cf_enprompt"], out_dir=str(tmp_path / "sweep")))
    try:
        problems = evaluator.broken_tasks(["nollysenti_hau_cf_enprompt"])
    finally:
        evaluator.close()
    (problem,) = problems.values()
    assert "ScriptOnlyDatasetError" in problem and "finetasks-afr data import-raw" in problem, problem
    assert "-d nollysenti" in problem

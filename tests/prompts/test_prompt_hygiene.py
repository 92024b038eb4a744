"""Suite-wide prompt hygiene on real rows: every task with rows in ../shared/data, 0-shot and 5-shot, every
formulation and both prompt languages.

What a user must be able to trust about a prompt, checked on the prompts lighteval itself builds
(`LightevalTask.get_docs` + `PromptManager.prepare_prompt`, with finetasks_afr.tasks' fixes applied):
no document among its own few-shot examples (not itself, not a copy of its text from another split); no
invisible characters (zero-width, BOM, variation selectors), literal "\\n" sequences or un-normalised (non-NFC)
text; no prompt or partial-scoring context starting with whitespace; no doubled question word
("Question: Question:"); few-shot answers that do not follow one pattern for every document; and prompts that are
byte-identical across processes with different PYTHONHASHSEED.

Every task is rendered on its first documents (lighteval's own path, 0- and 5-shot; of MAFAND and NTREX, the tasks
of eight configs: RENDERED_TRANSLATION_CONFIGS). The raw releases of NollySenti, MAFAND-MT and NTREX-128 are checked
on EVERY row of their evaluation splits besides: each row through its task's prompt function and lighteval's
PromptManager (0-shot; every task, log-likelihood and generation forms alike), and 5-shot through lighteval's own
path on every row of NollySenti and of one MAFAND and one NTREX config both ways (the suite's balanced few-shot
sampler costs O(split size) per document on a translation split, whose every reference is its own class: every
row of every config would take minutes). The releases are not NFC throughout (338 of 500 Yoruba NollySenti test
reviews, 1,311 NTREX Yoruba lines, bbj/ewe/fon/mos MAFAND rows): the mirror keeps the text as released and every
prompt must come out NFC.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import regex

PROJECT = Path(__file__).resolve().parents[2]
DOCS_PER_TASK = 6
FEWSHOT = 5
# Invisible: every format (Cf) and private-use (Co) character and the variation selectors, by category (written
# here independently of finetasks_afr.prompts.text), but for ZWJ/ZWNJ between two letters or marks of a script that
# joins (of those, the data holds Arabic and Sinhala)
INVISIBLE = regex.compile(r"[\p{Cf}\p{Co}\uFE00-\uFE0F\U000E0100-\U000E01EF]")
JOINING = regex.compile(r"[\p{scx=Arabic}\p{scx=Sinhala}\p{scx=Syriac}\p{scx=Devanagari}\p{scx=Nko}\p{scx=Adlam}]")
DOUBLED_WORD = re.compile(r"(?:^|\n)([^\s:]+):\s*\1:", flags=re.MULTILINE)

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]


@dataclasses.dataclass
class Rendered:
    """One evaluated document of one task, as lighteval renders it."""

    task: str
    query: str
    zero_shot: str
    five_shot: str
    example_queries: list[str]
    example_answers: list[str]
    contexts: list[str]  # partial-scoring contexts (Winogrande CF), else []


def _mirrored_tasks(mirror: Path) -> list[Any]:
    """The suite's tasks built with `mirror` configured (hf_location resolves at build time), minus perplexity.

    Importing finetasks_afr.tasks applies the lighteval fixes (few-shot sampling included) exactly as the CLI does;
    the configs are then rebuilt here rather than by reloading that module, so other tests keep the hub configs.
    """
    import finetasks_afr.tasks  # noqa: F401  (applies the fixes)
    from finetasks_afr.benchmarks import all_tasks
    from finetasks_afr.benchmarks.common import TASK_INFO

    os.environ["FINETASKS_AFR_DATA_DIR"] = str(mirror)
    return [
        config
        for config in all_tasks()
        if config.hf_repo.startswith(str(mirror)) and TASK_INFO[config.name].formulation != "PPL"
    ]


def _render(config: Any, docs_per_task: int | None = DOCS_PER_TASK) -> Iterator[Rendered]:
    from lighteval.tasks.lighteval_task import LightevalTask
    from lighteval.tasks.prompt_manager import PromptManager

    manager = PromptManager()
    task = LightevalTask(dataclasses.replace(config, num_fewshots=FEWSHOT))
    for doc in task.get_docs(max_samples=docs_per_task):
        zero = dataclasses.replace(doc, fewshot_samples=[])
        yield Rendered(
            task=config.name,
            query=doc.query,
            zero_shot=manager.prepare_prompt(zero),
            five_shot=manager.prepare_prompt(doc),
            example_queries=[example.query for example in doc.fewshot_samples],
            example_answers=[example.get_golds()[0] for example in doc.fewshot_samples],
            contexts=list((doc.specific or {}).get("partial_scoring_contexts") or []),
        )


@pytest.fixture(scope="module")
def rendered(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Rendered]]:
    """Every mirrored task (about 900) rendered on its first documents, 0- and 5-shot."""
    from finetasks_afr.scoring.lighteval_runtime import memoised_datasets
    from tests.hub_rows import hub_row_files, write_hub_row_mirror
    from tests.raw_mirror import overlay, raw_mirror

    mirror = overlay(raw_mirror(shared_data, tmp_path_factory)[0], tmp_path_factory.mktemp("mirror"))
    # hub-only datasets: rows written by hand in their published schema (not over a raw release's real rows)
    write_hub_row_mirror(mirror, [key for key in hub_row_files() if not (mirror / key / "README.md").is_file()])
    mp = pytest.MonkeyPatch()
    mp.setenv("FINETASKS_AFR_DATA_DIR", str(mirror))
    mp.setenv("HF_DATASETS_OFFLINE", "1")
    mp.setenv("HF_HUB_OFFLINE", "1")
    try:
        # each dataset read once, as a sweep reads it (the CF/MCF/hybrid and both prompt-language tasks of a config
        # share it): loading was 45% of this fixture
        with memoised_datasets():
            return {config.name: list(_render(config)) for config in _mirrored_tasks(mirror) if _rendered_here(config)}
    finally:
        mp.undo()


RENDERED_TRANSLATION_CONFIGS = {
    "mafand": {"en-hau", "en-amh", "en-pcm", "fr-bam"},
    "ntrex": {"hau_Latn", "ven_Latn", "mey_Arab", "orm_Ethi"},
}
"""The MAFAND and NTREX configs `rendered` renders: Ethiopic and Arabic script, the French pivot, languages without
a lighteval member (tags PCM, VE), Oromo's Latin text under orm_Ethi. lighteval builds every document of a split to
render six (0.35 s a translation task, 40 s for all 92 of the generation form); every row of every config is checked
0-shot below, and 5-shot on every row of en-hau and orm_Ethi."""


def _rendered_here(config: Any) -> bool:
    from finetasks_afr.benchmarks.common import TASK_INFO

    sample = RENDERED_TRANSLATION_CONFIGS.get(TASK_INFO[config.name].dataset)
    return sample is None or config.hf_subset in sample


def test_every_family_and_variant_is_covered(rendered: dict[str, list[Rendered]]) -> None:
    from finetasks_afr.benchmarks.common import TASK_INFO

    variants = {(TASK_INFO[name].benchmark, TASK_INFO[name].formulation, TASK_INFO[name].prompt) for name in rendered}
    benchmarks = {benchmark for benchmark, _, _ in variants}
    assert {"sib200", "masakhanews", "afrisenti", "belebele", "winogrande_afr", "afriqa"} <= benchmarks
    assert {f"mmlu_afr_{s}" for s in ("clinical_knowledge", "college_medicine", "virology")} <= benchmarks
    for formulation in ("CF", "MCF", "HYBRID", "GEN"):
        for prompt in ("native", "en"):
            assert any(f == formulation and p == prompt for _, f, p in variants), (formulation, prompt)
    assert len(rendered) > 700  # 762 on ../shared/data
    assert all(docs for docs in rendered.values())


def test_no_document_among_its_own_examples(rendered: dict[str, list[Rendered]]) -> None:
    leaks = [
        (item.task, item.query[:60])
        for docs in rendered.values()
        for item in docs
        if _normalised(item.query) in {_normalised(query) for query in item.example_queries}
    ]
    assert not leaks


def invisible(text: str) -> list[str]:
    """The invisible characters of `text`, a joiner inside a word of a joining script aside."""
    found = []
    for match in INVISIBLE.finditer(text):
        i, char = match.start(), match.group()
        if (
            char in "\u200c\u200d"
            and 0 < i < len(text) - 1
            and all(
                JOINING.match(near) and unicodedata.category(near)[0] in "LM" for near in (text[i - 1], text[i + 1])
            )
        ):
            continue
        found.append(f"U+{ord(char):04X}")
    return found


def unclean(text: str) -> bool:
    """Invisible characters, a literal backslash-n, or text that NFC would change."""
    return bool(invisible(text)) or "\\n" in text or unicodedata.normalize("NFC", text) != text


def test_no_invisible_characters_escaped_breaks_or_unnormalised_text(rendered: dict[str, list[Rendered]]) -> None:
    bad = []
    for docs in rendered.values():
        for item in docs:
            for text in (item.zero_shot, item.five_shot, *item.example_answers, *item.contexts):
                if unclean(text):
                    bad.append((item.task, text[:80]))
    assert not bad


def test_no_prompt_or_context_starts_with_whitespace(rendered: dict[str, list[Rendered]]) -> None:
    bad = [
        (item.task, text[:40])
        for docs in rendered.values()
        for item in docs
        for text in (item.zero_shot, item.five_shot, *item.contexts)
        if not text or text[0].isspace()
    ]
    assert not bad


def test_no_doubled_question_word(rendered: dict[str, list[Rendered]]) -> None:
    bad = [
        (item.task, match.group(0))
        for docs in rendered.values()
        for item in docs
        for match in [DOUBLED_WORD.search(item.five_shot)]
        if match
    ]
    assert not bad


def test_few_shot_answers_do_not_repeat_one_pattern(rendered: dict[str, list[Rendered]]) -> None:
    """With 5 examples per document, the answer sequences of a task's documents must not all be the same."""
    same = [
        name
        for name, docs in rendered.items()
        if len(docs) > 1 and len({tuple(item.example_answers) for item in docs}) == 1
    ]
    assert not same


def test_five_examples_per_document(rendered: dict[str, list[Rendered]]) -> None:
    short = [(item.task, len(item.example_queries)) for docs in rendered.values() for item in docs
             if len(item.example_queries) != FEWSHOT]  # fmt: skip
    assert not short


def _normalised(text: str) -> str:
    """Letters, marks and digits after NFKC and case folding: a near-copy (quotes, emoji, punctuation, spacing)
    compares equal."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(char for char in folded if unicodedata.category(char)[0] in "LMN" and not INVISIBLE.match(char))


# ------------------------------------------------------------------- the documents issue 26 named, by id

INVISIBLE_DOCUMENTS = [
    # (task, "test" for an evaluated document or "fewshot" for a few-shot one, document id, the raw character)
    ("afrisenti_ary_cf", "fewshot", "397", "\u061c"),
    ("afrisenti_ary_mcf", "test", "1713", "\u200f"),
    ("afrisenti_ary_hybrid", "test", "1706", "\u200e"),
    ("sib200_aka_cf", "fewshot", "391", "\u202a"),
    ("flores_mt_xx2en_gen_aka", "fewshot", "391", "\u202a"),
    ("flores_mt_en2xx_ll_aka", "fewshot", "391", "\u202a"),
    ("flores_mt_en2xx_gen_lua", "fewshot", "502", "\u2063"),
    ("afriqa_yor", "test", "160", "\u2063"),
    ("afrisenti_orm_cf", "test", "870", "\ue702"),
    ("afrisenti_pcm_mcf_enprompt", "test", "1016", "\u2068"),
    ("afriqa_twi", "fewshot", "33", "\u200e"),
    ("afriqa_twi_enprompt", "fewshot", "329", "\u200e"),
]
NEAR_COPY_DOCUMENTS = [
    # (task, evaluated document id, the id of its near-copy among the few-shot documents)
    ("afriqa_twi", "225", "113"),  # answers "Prince Edward" and "Prince Edward,"
    ("afriqa_kin", "69", "51"),  # quotes around "Spy Kids"
    ("afrisenti_ibo_cf", "1530", "473"),  # "Nri ndị oga" and "Nri ndị oga 😂"
    ("afrisenti_orm_mcf", "220", "369"),  # `""` inserted
    ("afrisenti_yor_hybrid", "1403", "858"),  # punctuation only
]


def _named_task(mirror: Path, name: str) -> Any:
    from lighteval.tasks.lighteval_task import LightevalTask

    import finetasks_afr.tasks  # noqa: F401  (applies the fixes)
    from finetasks_afr.benchmarks import all_tasks

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FINETASKS_AFR_DATA_DIR", str(mirror))
        patch.setenv("HF_DATASETS_OFFLINE", "1")
        patch.setenv("HF_HUB_OFFLINE", "1")
        config = next(c for c in all_tasks() if c.name == name)
        return LightevalTask(dataclasses.replace(config, num_fewshots=FEWSHOT))


@pytest.fixture(scope="module")
def real_mirror(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.raw_mirror import raw_mirror

    return raw_mirror(shared_data, tmp_path_factory)[0]


@pytest.mark.parametrize(("name", "side", "doc_id", "char"), INVISIBLE_DOCUMENTS)
def test_the_documents_with_invisible_characters_are_clean(
    real_mirror: Path, name: str, side: str, doc_id: str, char: str
) -> None:
    """Their raw rows hold a bidi mark, an isolate, an invisible separator or a private-use glyph; their documents
    (query and choices), their 0- and 5-shot prompts, and the prompts that show them as an example hold none."""
    from lighteval.tasks.prompt_manager import PromptManager

    task = _named_task(real_mirror, name)
    split = task.fewshot_split if side == "fewshot" else task.evaluation_split[0]
    raw = (real_mirror / _dataset(task.config)).rglob("*.jsonl")
    assert any(
        char in path.read_text(encoding="utf-8") for path in raw if f"/{split}" in str(path) or split in path.name
    )
    docs = task.fewshot_docs() if side == "fewshot" else task.get_docs()
    doc = next(d for d in docs if d.id == doc_id)
    manager = PromptManager()
    texts = [doc.query, *doc.choices, manager.prepare_prompt(dataclasses.replace(doc, fewshot_samples=[]))]
    if side == "test":
        texts.append(manager.prepare_prompt(doc))
    else:  # every candidate it can be an example of: the sampler asked for the whole pool shows it cleanly
        shown = manager.prepare_prompt(dataclasses.replace(task.eval_docs()[0], fewshot_samples=[doc]))
        texts.append(shown)
    assert not [invisible(text) for text in texts if invisible(text)]
    assert not [text[:60] for text in texts if unclean(text)]


@pytest.mark.parametrize(("name", "doc_id", "copy_id"), NEAR_COPY_DOCUMENTS)
def test_the_near_copies_are_never_examples(real_mirror: Path, name: str, doc_id: str, copy_id: str) -> None:
    """The evaluated document's near-copy (same passage and question or tweet, up to quotes, emoji, punctuation
    and the answer) is in its few-shot pool, and lighteval's sampler, asked for the whole pool, never returns it:
    no variance seed can show it."""
    from finetasks_afr.prompts import fewshot

    task = _named_task(real_mirror, name)
    if not fewshot.applied():
        pytest.skip("finetasks_afr.prompts.fewshot replaces the sampler of lighteval 0.13 only")
    doc = next(d for d in task.eval_docs() if d.id == doc_id)
    pool = task.fewshot_docs()
    copy = next(d for d in pool if d.id == copy_id)
    assert _normalised(copy.query) == _normalised(doc.query)
    for seed in (0, 1):
        drawable = task.fewshot_sampler.sample_fewshot_examples(len(pool), seed, formatted_doc=doc)
        assert len(drawable) >= len(pool) - 5
        assert not [e.id for e in drawable if _normalised(e.query) == _normalised(doc.query)]


# -------------------------------------------------------------------- every row of the three raw releases

RAW_RELEASES = ("nollysenti", "mafand", "ntrex")
FIVE_SHOT_CONFIGS = {"mafand": {"en-hau"}, "ntrex": {"orm_Ethi"}}  # 5-shot on every row here; NollySenti: all
NON_NFC_TEST_ROWS = {("nollysenti", "yo"): 338, ("ntrex", "yor_Latn"): 1311}  # counted in the raw files


def _release_tasks(mirror: Path) -> list[Any]:
    """Every task of the three families, log-likelihood translation forms included, built reading `mirror`."""
    import finetasks_afr.tasks  # noqa: F401  (applies the fixes)
    from finetasks_afr.benchmarks import mafand, nollysenti, ntrex

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FINETASKS_AFR_DATA_DIR", str(mirror))
        configs = [config for module in (nollysenti, mafand, ntrex) for config in module.tasks()]
    assert configs and all(config.hf_repo == str(mirror / _dataset(config)) for config in configs)
    return configs


def _dataset(config: Any) -> str:
    from finetasks_afr.benchmarks.common import TASK_INFO

    return TASK_INFO[config.name].dataset


def _prompt_problems(prompt: str) -> list[str]:
    """What is wrong with one rendered prompt (the checks of the tests above, on one text)."""
    problems = []
    if unclean(prompt):
        problems.append("invisible character, literal backslash-n or not NFC")
    if not prompt or prompt[0].isspace():
        problems.append("starts with whitespace")
    if DOUBLED_WORD.search(prompt):
        problems.append("doubled question word")
    return problems


@dataclasses.dataclass
class RowsChecked:
    """Every row of the raw releases through its tasks' prompt functions, 0-shot."""

    rows: dict[str, int]  # task -> rows of its evaluation split in the mirror
    docs: dict[str, int]  # task -> documents checked
    non_nfc: dict[tuple[str, str], int]  # (dataset, config) -> rows with a text NFC would change
    bad: list[tuple[str, int, str]]  # (task, row, what is wrong)


@pytest.fixture(scope="module")
def release_rows(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> RowsChecked:
    from lighteval.tasks.prompt_manager import PromptManager

    from tests.raw_mirror import EMPTY_RELEASE_ROWS, mirror_files, raw_mirror, read_jsonl

    mirror = raw_mirror(shared_data, tmp_path_factory)[0]
    files = mirror_files(mirror)
    manager = PromptManager()
    checked = RowsChecked({}, {}, {}, [])
    cache: dict[Path, list[dict[str, Any]]] = {}
    for config in _release_tasks(mirror):
        dataset = _dataset(config)
        path = files[dataset][config.hf_subset][config.evaluation_splits[0]]
        if path not in cache:
            cache[path] = read_jsonl(path)
            checked.non_nfc[(dataset, config.hf_subset)] = sum(
                any(unicodedata.normalize("NFC", text) != text for text in _strings(row)) for row in cache[path]
            )
        checked.rows[config.name] = len(cache[path])
        checked.docs[config.name] = 0
        empty = EMPTY_RELEASE_ROWS.get((dataset, config.hf_subset), ())
        checked.rows[config.name] -= len(empty)  # rows with no visible text: turned down by design
        for index, row in enumerate(cache[path]):
            doc = config.prompt_function(dict(row), config.name)
            if (doc is None) != (index in empty):
                checked.bad.append((config.name, index, "row turned down" if doc is None else "empty row kept"))
            if doc is None or index in empty:
                continue
            checked.docs[config.name] += 1
            problems = _prompt_problems(manager.prepare_prompt(doc))
            problems += [f"answer {gold!r}: not clean" for gold in doc.get_golds() if unclean(gold)]
            problems += [f"choice {choice!r}: not clean" for choice in doc.choices if unclean(choice)]
            checked.bad += [(config.name, index, problem) for problem in problems]
    return checked


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def test_every_row_of_the_raw_releases_gives_a_clean_prompt(release_rows: RowsChecked) -> None:
    """NollySenti, MAFAND-MT and NTREX-128 from their raw releases: every row of every task's evaluation split gives
    a document (none turned down but the rows without visible text, `EMPTY_RELEASE_ROWS`) whose 0-shot prompt,
    answers and choices are clean, NFC included although the release's text is not."""
    assert not release_rows.bad, f"{len(release_rows.bad)} problems, first: {release_rows.bad[:10]}"
    assert release_rows.docs == release_rows.rows
    datasets = {name.split("_")[0] for name in release_rows.docs}
    assert datasets == {"nollysenti", "mafand", "ntrex"}, datasets
    assert len(release_rows.docs) == 24 + 84 + 100  # NollySenti 5 languages, MAFAND 21 x 4, NTREX 25 x 4
    assert sum(release_rows.docs.values()) > 300_000
    assert NON_NFC_TEST_ROWS.items() <= release_rows.non_nfc.items(), release_rows.non_nfc


def test_five_shot_prompts_on_every_row_of_nollysenti_and_a_mafand_and_an_ntrex_config(
    shared_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """lighteval's own path, 5-shot, on every row: of every NollySenti task, and of MAFAND en-hau and NTREX orm_Ethi
    both ways (the generation form: the log-likelihood form has the same prompts). en-hau repeats 14 test pairs in
    its validation split (the few-shot split) and 11 within test, NTREX's Oromo file 13 lines: no document is shown
    itself or a copy of its text, every document gets five examples, and the 5-shot prompts are clean."""
    from finetasks_afr.benchmarks.common import TASK_INFO
    from tests.raw_mirror import raw_mirror

    mirror = raw_mirror(shared_data, tmp_path_factory)[0]
    configs = [
        config
        for config in _release_tasks(mirror)
        if TASK_INFO[config.name].formulation != "PPL"
        and config.hf_subset in FIVE_SHOT_CONFIGS.get(_dataset(config), {config.hf_subset})
    ]
    assert len(configs) == 24 + 2 + 2
    bad: list[tuple[str, str]] = []
    documents = 0
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FINETASKS_AFR_DATA_DIR", str(mirror))
        patch.setenv("HF_DATASETS_OFFLINE", "1")
        patch.setenv("HF_HUB_OFFLINE", "1")
        for config in configs:
            for item in _render(config, docs_per_task=None):
                documents += 1
                if len(item.example_queries) != FEWSHOT:
                    bad.append((item.task, f"{len(item.example_queries)} examples"))
                if _normalised(item.query) in {_normalised(query) for query in item.example_queries}:
                    bad.append((item.task, f"shown itself: {item.query[:60]!r}"))
                bad += [(item.task, problem) for problem in _prompt_problems(item.five_shot)]
                bad += [(item.task, "example answer not clean") for answer in item.example_answers if unclean(answer)]
    assert not bad, f"{len(bad)} problems, first: {bad[:10]}"
    assert documents == 24 * 500 + 2 * 1500 + 2 * 1997


# ------------------------------------------------------------------------------------ reproducibility

_DIGEST_SCRIPT = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("prompt_hygiene", {path!r})
module = importlib.util.module_from_spec(spec)
sys.modules["prompt_hygiene"] = module  # dataclasses look their module up there
spec.loader.exec_module(module)
print(json.dumps(module.digest_of_prompts({mirror!r})))
"""


def digest_of_prompts(mirror: str) -> dict[str, str]:
    """sha256 of the 0- and 5-shot prompts of one task per benchmark x formulation x prompt language."""
    from finetasks_afr.benchmarks.common import TASK_INFO

    chosen: dict[tuple[str, str, str], Any] = {}
    for config in _mirrored_tasks(Path(mirror)):
        info = TASK_INFO[config.name]
        chosen.setdefault((info.benchmark, info.formulation, info.prompt), config)
    digests = {}
    for config in chosen.values():
        digest = hashlib.sha256()
        for item in _render(config, docs_per_task=3):
            digest.update(item.zero_shot.encode() + b"\0" + item.five_shot.encode() + b"\0")
        digests[config.name] = digest.hexdigest()
    return digests


def test_prompts_are_byte_identical_across_hash_seeds(shared_data: Path, tmp_path: Path) -> None:
    from finetasks_afr.data.mirror import import_raw

    mirror = tmp_path / "mirror"
    import_raw(shared_data, mirror, datasets=["sib200", "winogrande_afr", "masakhanews", "afrisenti"],
               configs=["hau_Latn", "winogrande_zu", "hau", "amh"])  # fmt: skip
    script = _DIGEST_SCRIPT.format(path=str(Path(__file__).resolve()), mirror=str(mirror))
    runs = []
    for seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=PROJECT)
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert len(runs[0]) >= 10
    assert runs[0] == runs[1]

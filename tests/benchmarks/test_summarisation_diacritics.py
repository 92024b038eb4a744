"""XL-Sum (summarisation) and AfriDiacritics (diacritic restoration): ll and gen tasks on the translation metrics.

- Every family builds in every language its data covers, with exact names, subsets, splits, metrics and metadata.
- The prompts render, through a hand-written hub-row mirror (tests/fixtures/hub_rows) and a real LightevalTask, to
  exactly the text documented: lighteval's XSum prompt under the instruction line for XL-Sum, the restoration
  prompt for AfriDiacritics (instruction written once above the few-shot examples).
- A long hand-made article is cut at the last whitespace within ARTICLE_MAX_CHARS, in the prompt too.
- bits_per_byte that a real lighteval Pipeline reports for the suite's own task configs (AfriDiacritics 0- and
  2-shot, XL-Sum 0-shot) equals a direct forward pass of a tiny model over the exact tokens scored, to 1e-5.
- chrF++ through the tasks' metric equals sacrebleu on hand-made pairs and on the tiny model's generations.
- ROUGE-L is not offered, and why: lighteval's Metrics.rougeL scores an Amharic summary against itself 0.
- Rows missing a side are skipped and counted.
"""

from __future__ import annotations

import dataclasses
import math
import os
import types
from pathlib import Path
from typing import Any

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_variable, "1")

import pytest  # noqa: E402
import sacrebleu  # noqa: E402

import finetasks_afr.tasks  # noqa: E402,F401  (lighteval fixes applied, literals registered, as the CLI does)
from finetasks_afr.benchmarks import (  # noqa: E402
    afridiacritics,
    translation,
    xlsum,
)
from finetasks_afr.benchmarks.common import SKIPPED_ROWS, TASK_INFO  # noqa: E402
from tests.benchmarks.test_translation import _items, _run, recomputed_bits_per_byte  # noqa: E402
from tests.hub_rows import hub_rows, write_hub_row_mirror  # noqa: E402

TOL = 1e-5
XLSUM = {"amh": "amharic", "hau": "hausa", "ibo": "igbo", "orm": "oromo", "pcm": "pidgin", "run": "kirundi",
         "som": "somali", "swa": "swahili", "tir": "tigrinya", "yor": "yoruba"}  # fmt: skip
ADR = ["bbj", "fon", "ibo", "wol", "yor"]
XSUM_TAIL = "\n\nA one-sentence summary of the above document is:"


def _names(benchmark: str, languages: list[str]) -> set[str]:
    return {f"{benchmark}_{form}_{iso3}" for iso3 in languages for form in ("ll", "gen")}


# ------------------------------------------------------------------------------------------------ task tables


def test_every_family_builds_in_every_language_with_exact_names_and_metadata() -> None:
    built = {module: {config.name: config for config in module.tasks()} for module in (xlsum, afridiacritics)}
    assert set(built[xlsum]) == _names("xlsum", list(XLSUM)) and len(built[xlsum]) == 20
    assert set(built[afridiacritics]) == _names("afridiacritics", ADR) and len(built[afridiacritics]) == 10
    expected_splits = {xlsum: (["test"], "validation", ["train", "validation", "test"]),
                       afridiacritics: (["test"], "dev", ["train", "dev", "test"])}  # fmt: skip
    for module, configs in built.items():
        for name, config in configs.items():
            info = TASK_INFO[name]
            benchmark, form, iso3 = name.rsplit("_", 2)
            assert (info.benchmark, info.language, info.dataset) == (benchmark, iso3, module.DATASET)
            assert info.subset == config.hf_subset == (XLSUM[iso3] if module is xlsum else iso3)
            assert (info.category, info.prompt) == ("GEN", "native")
            splits = (list(config.evaluation_splits), config.few_shots_split, list(config.hf_avail_splits))
            assert splits == expected_splits[module]
            [metric] = config.metrics
            if form == "ll":
                assert info.formulation == "PPL" and math.isnan(info.random_baseline)
                assert metric is translation.BITS_PER_BYTE and not config.stop_sequence
            else:
                assert (info.formulation, info.random_baseline) == ("GEN", 0.0)
                assert metric is translation.CHRF_PLUS_PLUS and list(config.stop_sequence) == ["\n"]
                assert config.generation_size == module.GENERATION_SIZE
    # hub locations: XL-Sum's parquet export (its script revision is refused by datasets>=4), ADR pinned
    assert (built[xlsum]["xlsum_ll_tir"].hf_repo, built[xlsum]["xlsum_ll_tir"].hf_revision) == (
        "csebuetnlp/xlsum", "refs/convert/parquet")  # fmt: skip
    adr = built[afridiacritics]["afridiacritics_gen_bbj"]
    assert (adr.hf_repo, adr.hf_revision) == ("masakhane/diacritics-restoration", afridiacritics.REVISION)


def test_licences_are_flagged_non_commercial() -> None:
    assert "non-commercial" in xlsum.SOURCES[0].notes.lower() and "NC-SA" in xlsum.SOURCES[0].notes
    assert "non-commercial" in afridiacritics.SOURCES[0].notes.lower()
    assert "NON-COMMERCIAL" in (xlsum.__doc__ or "") and "NON-COMMERCIAL" in (afridiacritics.__doc__ or "")


# ------------------------------------------------------------------------------------------------ prompts


def _mirror_configs(mirror: Path) -> dict[str, Any]:
    assert write_hub_row_mirror(mirror, ["xlsum", "afridiacritics"]) == ["xlsum", "afridiacritics"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FINETASKS_AFR_DATA_DIR", str(mirror))
        return {config.name: config for module in (xlsum, afridiacritics) for config in module.tasks()}


def _docs(config: Any, shots: int) -> list[Any]:
    from lighteval.tasks.lighteval_task import LightevalTask

    return LightevalTask(dataclasses.replace(config, num_fewshots=shots)).get_docs(max_samples=5)


def test_xlsum_prompt_is_lightevals_xsum_prompt_under_the_instruction(tmp_path: Path) -> None:
    from lighteval.tasks.prompt_manager import PromptManager
    from lighteval.tasks.tasks.summarization import xsum_prompt

    configs = _mirror_configs(tmp_path)
    manager = PromptManager()
    for name, config_name, language in (("xlsum_gen_hau", "hausa", "Hausa"), ("xlsum_ll_swa", "swahili", "Swahili")):
        config = configs[name]
        assert config.hf_repo == str(tmp_path / "xlsum") and config.hf_subset == config_name
        rows = hub_rows("xlsum")["configs"][config_name]["test"]
        docs = _docs(config, 0)  # lighteval orders the documents itself: match them to rows by article
        by_text = {row["text"]: row for row in rows}
        assert len(docs) == len(rows) == 2
        assert {doc.query.split("Document: ", 1)[1].removesuffix(XSUM_TAIL) for doc in docs} == set(by_text)
        for doc in docs:
            row = by_text[doc.query.split("Document: ", 1)[1].removesuffix(XSUM_TAIL)]
            instruction = f"Summarise the following {language} news article in {language}."
            theirs = xsum_prompt({"document": row["text"], "summary": row["summary"]}, name)
            assert doc.instruction == instruction and doc.query == f"{instruction}\n\n{theirs.query}"
            assert doc.query == f"{instruction}\n\nDocument: {row['text']}{XSUM_TAIL}"
            assert doc.choices == [" " + row["summary"]] and doc.gold_index == [0]
            assert manager.prepare_prompt(doc) == doc.query  # 0-shot: the instruction once, then the prompt


def test_afridiacritics_prompt_and_few_shot_layout(tmp_path: Path) -> None:
    from lighteval.tasks.prompt_manager import PromptManager

    configs = _mirror_configs(tmp_path)
    manager = PromptManager()
    for name, language in (("afridiacritics_gen_yor", "Yoruba"), ("afridiacritics_ll_ibo", "Igbo")):
        iso3 = name.rsplit("_", 1)[1]
        rows = hub_rows("afridiacritics")["configs"][iso3]
        dev_targets = {row["target"] for row in rows["dev"]}
        docs = _docs(configs[name], 2)
        assert len(docs) == len(rows["test"]) == 3
        instruction = f"Restore the diacritics of the following {language} text."
        by_text = {row["text"]: row for row in rows["test"]}
        inputs = [doc.query.split("Without diacritics: ", 1)[1].removesuffix("\nWith diacritics:") for doc in docs]
        assert set(inputs) == set(by_text)
        for doc, text in zip(docs, inputs, strict=True):
            row = by_text[text]
            assert row["text"] != row["target"]  # the input really lacks the diacritics
            assert doc.query == f"{instruction}\n\nWithout diacritics: {row['text']}\nWith diacritics:"
            assert doc.choices == [" " + row["target"]] and doc.gold_index == [0]
            prompt = manager.prepare_prompt(doc)
            assert prompt.startswith(instruction + "\n\nWithout diacritics: ") and prompt.count(instruction) == 1
            assert prompt.endswith(f"\n\nWithout diacritics: {row['text']}\nWith diacritics:")
            assert prompt.count("With diacritics:") == 3 and len(doc.fewshot_samples) == 2
            assert {example.choices[0].strip() for example in doc.fewshot_samples} <= dev_targets


def test_long_article_is_cut_at_a_word_boundary_in_the_prompt() -> None:
    words = [f"kalma{i}{'x' * (i % 7)}" for i in range(600)]  # varied word lengths, about 6,000 characters
    article = " ".join(words)
    limit = xlsum.ARTICLE_MAX_CHARS
    cut = xlsum.truncate_article(article)
    assert len(article) > 3 * limit and len(cut) <= limit
    assert article.startswith(cut) and article[len(cut)] == " "  # a prefix ending where a word ends
    kept = cut.split(" ")
    assert kept == words[: len(kept)] and len(cut) + 1 + len(words[len(kept)]) > limit  # the next word did not fit
    assert xlsum.truncate_article("short text") == "short text"
    assert xlsum.truncate_article("a" * (limit + 10)) == "a" * limit  # no whitespace: a hard cut at the limit
    exact = "b" * (limit - 3) + " cc"
    assert xlsum.truncate_article(exact) == exact  # exactly the limit: unchanged
    config = next(c for c in xlsum.tasks() if c.name == "xlsum_gen_yor")
    doc = config.prompt_function({"id": "1", "url": "u", "title": "t", "summary": "Àkótán.", "text": article}, "t")
    assert doc is not None and doc.query == (
        f"Summarise the following Yoruba news article in Yoruba.\n\nDocument: {cut}{XSUM_TAIL}"
    )
    assert words[len(kept)] not in doc.query.split()


def test_rows_missing_a_side_are_skipped_and_counted() -> None:
    summary = next(c for c in xlsum.tasks() if c.name == "xlsum_ll_hau")
    restore = next(c for c in afridiacritics.tasks() if c.name == "afridiacritics_gen_yor")
    before = SKIPPED_ROWS[summary.name], SKIPPED_ROWS[restore.name]
    assert summary.prompt_function({"text": "Labari."}, summary.name) is None
    assert summary.prompt_function({"text": "Labari.", "summary": " \u200b "}, summary.name) is None
    assert summary.prompt_function({"text": None, "summary": "Takaitawa."}, summary.name) is None
    assert restore.prompt_function({"text": "Oja ti si."}, restore.name) is None
    assert restore.prompt_function({"text": "", "target": "Ọjà ti ṣí."}, restore.name) is None
    assert (SKIPPED_ROWS[summary.name], SKIPPED_ROWS[restore.name]) == (before[0] + 3, before[1] + 2)
    assert restore.prompt_function({"text": "Oja ti si.", "target": "Ọjà ti ṣí."}, restore.name) is not None


# ------------------------------------------------------------------------------------------------ metrics

PAIRS = [
    ("Ọjà ti ṣí ní Èkó lónìí.", "Ọjà ti ṣí ní Èkó lónìí."),
    ("Oja ti si ni Eko lonii.", "Ọjà ti ṣí ní Èkó lónìí."),
    ("Àwọn ọmọdé ń ṣeré.", "Àwọn ọmọdé ń ṣeré ní ọgbà ilé ìwé."),
    ("", "Òjò rọ̀ púpọ̀ ní Ìbàdàn lánàá."),
    ("Jihar Kano za ta gina makarantu.", "Jihar Kano za ta gina sababbin makarantu ashirin a bana."),
]


def test_chrf_plus_plus_of_the_tasks_equals_sacrebleu() -> None:
    hypotheses, references = [h for h, _ in PAIRS], [r for _, r in PAIRS]
    expected = sacrebleu.corpus_chrf(hypotheses, [references], word_order=2).score
    for name in ("xlsum_gen_amh", "afridiacritics_gen_yor"):
        config = next(c for module in (xlsum, afridiacritics) for c in module.tasks() if c.name == name)
        [metric] = config.metrics
        assert metric.metric_name == "chrf++" and metric.higher_is_better
        assert metric.corpus_level_fn.compute_corpus(_items(PAIRS)) == pytest.approx(expected, abs=TOL)
    assert 0 < expected < 100


def test_lighteval_rouge_l_cannot_score_these_languages() -> None:
    """Why the summaries are scored with chrF++: rouge_score's default tokenizer keeps only [a-z0-9] runs."""
    from lighteval.metrics.metrics import Metrics
    from lighteval.models.model_output import ModelResponse
    from lighteval.tasks.requests import Doc

    def rouge_l(prediction: str, reference: str) -> float:
        doc = Doc(query="", choices=[reference], gold_index=0)
        fn = Metrics.rougeL.value.sample_level_fn  # type: ignore[attr-defined]
        return float(fn.compute(doc=doc, model_response=ModelResponse(text=[prediction])))

    amharic = "ኢትዮጵያ ውስጥ ከባድ ዝናብ ዘነበ።"
    assert rouge_l(amharic, amharic) == 0.0  # a perfect Amharic summary scores nothing
    assert rouge_l("ሌላ ፍጹም የተለየ ጽሑፍ", amharic) == 0.0  # and an unrelated one the same
    # Yoruba: letters with diacritics are dropped, so "ṣé" (did) and "ṣí" (opened) are both no token at all
    assert rouge_l("Ọjà ti ṣé", "Ọjà ti ṣí") == 1.0
    assert sacrebleu.sentence_chrf(amharic, [amharic], word_order=2).score == pytest.approx(100.0)


# ------------------------------------------------------------------------------------------------ pipeline proof


@pytest.fixture(scope="module")
def row_mirror(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _mirror_configs(tmp_path_factory.mktemp("sum_adr_mirror"))


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from finetasks_afr.demo.tiny import make_tiny_causal_lm

    corpus = [
        f"Without diacritics: {row['text']}\nWith diacritics: {row['target']}"
        for rows in hub_rows("afridiacritics")["configs"].values()
        for split in rows.values()
        for row in split
    ]
    summaries = [row for rows in hub_rows("xlsum")["configs"].values() for split in rows.values() for row in split]
    corpus += [f"Document: {row['text']}{XSUM_TAIL} {row['summary']}" for row in summaries]
    return make_tiny_causal_lm(
        tmp_path_factory.mktemp("sum_adr_tiny") / "model", corpus * 2, vocab_size=500, hidden_size=32, layers=2,
        heads=2, max_position_embeddings=256, seed=0, train_steps=20, train_seq_len=32,
    )  # fmt: skip


def _module(config: Any) -> types.ModuleType:
    module = types.ModuleType("sum_adr_tasks")
    module.__dict__["TASKS_TABLE"] = [config]
    return module


@pytest.mark.slow
@pytest.mark.parametrize(("name", "shots"), [("afridiacritics_ll_yor", 0), ("afridiacritics_ll_yor", 2),
                                             ("xlsum_ll_hau", 0)])  # fmt: skip
def test_bits_per_byte_of_the_reference_equals_a_direct_forward_pass(
    row_mirror: dict[str, Any], tiny_model: Path, tmp_path: Path, name: str, shots: int
) -> None:
    config = row_mirror[name]
    pipeline = _run(tiny_model, _module(config), f"{name}|{shots}", tmp_path)
    reported = pipeline.get_results()["results"][f"{name}:{shots}"]["bits_per_byte"]
    details = pipeline.get_details()[f"{name}|{shots}"]
    iso3 = name.rsplit("_", 1)[1]
    field = "target" if name.startswith("afridiacritics") else "summary"
    rows = hub_rows(config.hf_repo.rsplit("/", 1)[1])["configs"][config.hf_subset]["test"]
    assert len(details) == len(rows), iso3

    def check(doc: Any, context: list[int], continuation: list[int], prompt: str) -> None:
        assert len(context) + len(continuation) <= 256  # nothing cut from the left: the whole prompt is scored
        assert doc.choices[0].strip() in {row[field] for row in rows}
        assert prompt.endswith(doc.query.split("\n\n", 1)[1])
        if name.startswith("afridiacritics"):
            assert prompt.count("With diacritics:") == shots + 1

    # lighteval sums float32 log-probabilities: a sum of ~100 nats carries ~1e-5 of float32 rounding
    recomputed = recomputed_bits_per_byte(details, tiny_model, check, rel=1e-6)
    assert reported == pytest.approx(recomputed, abs=TOL)


@pytest.mark.slow
def test_chrf_plus_plus_through_the_pipeline_equals_sacrebleu(
    row_mirror: dict[str, Any], tiny_model: Path, tmp_path: Path
) -> None:
    name = "afridiacritics_gen_yor"
    config = dataclasses.replace(row_mirror[name], generation_size=12)
    pipeline = _run(tiny_model, _module(config), f"{name}|2", tmp_path)
    reported = pipeline.get_results()["results"][f"{name}:2"]["chrf++"]
    details = pipeline.get_details()[f"{name}|2"]
    hypotheses = [(detail.model_response.final_text[0] or "").strip() for detail in details]
    references = [detail.doc.choices[0].strip() for detail in details]
    assert len(hypotheses) == 3 and all("\n" not in text for text in hypotheses)
    assert reported == pytest.approx(sacrebleu.corpus_chrf(hypotheses, [references], word_order=2).score, abs=TOL)

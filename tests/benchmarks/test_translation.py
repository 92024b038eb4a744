"""Translation tasks (finetasks_afr.benchmarks.translation; flores_mt, mafand, ntrex, salt).

- The ll metric: a REAL offline lighteval Pipeline (tiny Llama, translation prompt, 0- and 2-shot) must report the
  bits per byte that a direct forward pass gives for the exact token ids lighteval scored (log-softmax, summed over
  the reference's tokens, over the bytes of the reference as scored, summed over the corpus) to 1e-5.
- The gen metric: chrF++ of the task's metric equals sacrebleu.corpus_chrf(word_order=2) on hand-made pairs and on
  the tiny model's generations through the pipeline; lighteval's own Metrics.chrf_plus does not (issue 1112).
- SIB-200 rows align across languages by index_id (every language, every split, same topic), checked on the real
  release, and the FLORES tasks build their pairs from it: every language, both directions, on the real rows
  through a mirror.
- Every family builds in every language its data covers (exact names and counts), and the MAFAND/NTREX/SALT
  prompts render on the hand-written rows in the published schema (tests/fixtures/hub_rows).
"""

from __future__ import annotations

import csv
import dataclasses
import math
import os
import shutil
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_variable, "1")

import pytest  # noqa: E402
import sacrebleu  # noqa: E402

import finetasks_afr.tasks  # noqa: E402,F401  (lighteval fixes applied, literals registered, as the CLI does)
from finetasks_afr.benchmarks import (  # noqa: E402
    flores_mt,
    mafand,
    ntrex,
    salt,
    translation,
)
from finetasks_afr.benchmarks.common import TASK_INFO, clean  # noqa: E402
from finetasks_afr.scoring.core import weights_dtype  # noqa: E402

TOL = 1e-5
FLORES_LANGS = [
    "aeb",
    "afr",
    "aka",
    "amh",
    "ary",
    "arz",
    "bam",
    "bem",
    "cjk",
    "dik",
    "dyu",
    "ewe",
    "fon",
    "fuv",
    "hau",
    "ibo",
    "kab",
    "kam",
    "kbp",
    "kea",
    "kik",
    "kin",
    "kmb",
    "knc",
    "kon",
    "lin",
    "lua",
    "lug",
    "luo",
    "mos",
    "nso",
    "nus",
    "nya",
    "orm",
    "plt",
    "run",
    "sag",
    "sna",
    "som",
    "sot",
    "ssw",
    "swa",
    "taq",
    "tir",
    "tsn",
    "tso",
    "tum",
    "twi",
    "tzm",
    "umb",
    "wol",
    "xho",
    "yor",
    "zul",
]
MAFAND_EN = ["amh", "hau", "ibo", "kin", "lug", "luo", "nya", "pcm", "sna", "swa", "tsn", "twi", "xho", "yor", "zul"]
MAFAND_FR = ["bam", "bbj", "ewe", "fon", "mos", "wol"]
NTREX_LANGS = [
    "afr",
    "amh",
    "bem",
    "ewe",
    "hau",
    "ibo",
    "kin",
    "mey",
    "nde",
    "nso",
    "nya",
    "orm",
    "plt",
    "shi",
    "sna",
    "som",
    "ssw",
    "swa",
    "tir",
    "tsn",
    "ven",
    "wol",
    "xho",
    "yor",
    "zul",
]
SALT_LANGS = ["ach", "ibo", "lgg", "lug", "nyn", "swa", "teo"]


def _names(prefix: str, pivot: str, languages: list[str]) -> set[str]:
    return {
        f"{prefix}_{direction}_{form}_{iso3}"
        for iso3 in languages
        for direction in (f"{pivot}2xx", f"xx2{pivot}")
        for form in ("ll", "gen")
    }


# ------------------------------------------------------------------------------------------------ task tables


def test_every_family_builds_in_every_language_with_exact_names() -> None:
    assert len(FLORES_LANGS) == 54
    built = {module: {config.name: config for config in module.tasks()} for module in (flores_mt, mafand, ntrex, salt)}
    assert set(built[flores_mt]) == _names("flores_mt", "en", FLORES_LANGS) and len(built[flores_mt]) == 216
    assert set(built[mafand]) == _names("mafand_mt", "en", MAFAND_EN) | _names("mafand_mt", "fr", MAFAND_FR)
    assert len(built[mafand]) == 84
    assert set(built[ntrex]) == _names("ntrex_mt", "en", NTREX_LANGS) and len(built[ntrex]) == 100
    assert set(built[salt]) == _names("salt_mt", "en", SALT_LANGS) and len(built[salt]) == 28
    for configs in built.values():
        for name, config in configs.items():
            info = TASK_INFO[name]
            form = name.split("_")[-2]
            assert info.benchmark == name.rsplit("_", 2)[0] and info.language == name.rsplit("_", 1)[1]
            assert (info.category, info.prompt) == ("GEN", "native")
            [metric] = config.metrics
            if form == "ll":
                assert info.formulation == "PPL" and math.isnan(info.random_baseline)
                assert (metric.metric_name, metric.higher_is_better) == ("bits_per_byte", False)
                assert not config.stop_sequence
            else:
                assert (info.formulation, info.random_baseline) == ("GEN", 0.0)
                assert (metric.metric_name, metric.higher_is_better) == ("chrf++", True)
                assert list(config.stop_sequence) == ["\n"] and config.generation_size == 512
    assert (
        TASK_INFO["mafand_mt_fr2xx_ll_bam"].subset == "fr-bam"
        and TASK_INFO["mafand_mt_xx2en_gen_hau"].subset == "en-hau"
    )
    assert (
        TASK_INFO["ntrex_mt_en2xx_ll_plt"].subset == "mlg_Latn"
        and TASK_INFO["salt_mt_xx2en_ll_teo"].subset == "text-all"
    )
    assert (
        TASK_INFO["flores_mt_en2xx_ll_swa"].subset == "swh_Latn"
        and TASK_INFO["flores_mt_en2xx_ll_orm"].subset == "gaz_Latn"
    )


def test_analysis_reads_the_metrics_with_the_right_direction() -> None:
    from analysis.scores.metrics import metric_info

    ll, gen = metric_info("bits_per_byte"), metric_info("chrf++")
    assert ll is not None and not ll.higher_is_better and not ll.bounded
    assert gen is not None and gen.higher_is_better and not gen.bounded


def test_new_languages_are_registered_without_a_lighteval_member() -> None:
    from finetasks_afr.prompts.languages import LANGUAGES

    for iso3 in ("ach", "bbj", "lgg", "mey", "nde", "nyn", "shi", "teo", "ven"):
        assert LANGUAGES[iso3].lighteval is None, iso3
    assert (LANGUAGES["mey"].script, LANGUAGES["shi"].script) == ("Arab", "Arab")


# ------------------------------------------------------------------------------------------------ prompts


def test_prompt_is_lighteval_template_and_labels_follow_lighteval_rule() -> None:
    from lighteval.tasks.templates.translation import get_translation_prompt_function
    from lighteval.tasks.templates.utils.formulation import CFFormulation
    from lighteval.utils.language import Language

    row = {"s": "The market  opens early.", "t": "Kasuwa tana buɗewa da wuri."}
    ours = translation.translation_prompt(
        translation.ENGLISH, translation.Side("hau", Language.HAUSA), lambda line: (clean(line["s"]), clean(line["t"]))
    )(row, "t")

    def adapter(line: dict) -> Any:
        return {"source_text": clean(line["s"]), "target_text": clean(line["t"])}

    theirs = get_translation_prompt_function(Language.ENGLISH, Language.HAUSA, adapter, formulation=CFFormulation())(
        row, "t"
    )
    assert ours is not None and theirs is not None
    assert (ours.query, ours.choices, ours.gold_index) == (theirs.query, theirs.choices, theirs.gold_index)
    assert ours.query == "EN: The market opens early. HA:" and ours.choices == [" Kasuwa tana buɗewa da wuri."]
    # no lighteval member: the code's own tag, English punctuation rules
    pcm = translation.translation_prompt(
        translation.Side("pcm", None), translation.ENGLISH, lambda line: ("Wetin dey happen?", "What is happening?")
    )
    doc = pcm({}, "t")
    assert doc is not None and doc.query == "PCM: Wetin dey happen? EN:" and doc.choices == [" What is happening?"]
    assert translation.Side("ven", None).label == "VE" and translation.Side("nde", None).label == "ND"


def _mirror_tasks(mirror: Path, modules: list[types.ModuleType]) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FINETASKS_AFR_DATA_DIR", str(mirror))
        return {config.name: config for module in modules for config in module.tasks()}


def _read_tsv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


@pytest.mark.shared_data
def test_sib200_rows_align_across_languages_by_index_id(shared_data: Path) -> None:
    """Every language folder of the release: per split, the same index_ids as English, the same topic per id."""
    root = shared_data / "sib200"
    splits = ("train", "dev", "test")
    english = {split: {row["index_id"]: row["category"] for row in _read_tsv(root / "eng_Latn" / f"{split}.tsv")}
               for split in splits}  # fmt: skip
    assert [len(english[split]) for split in splits] == [701, 99, 204]
    assert not set(english["train"]) & set(english["dev"]) and not set(english["dev"]) & set(english["test"])
    folders = sorted(path for path in root.iterdir() if path.is_dir() and path.name != "eng_Latn")
    assert len(folders) >= 58
    for folder in folders:
        for split in splits:
            rows = _read_tsv(folder / f"{split}.tsv")
            own = {row["index_id"]: row["category"] for row in rows}
            assert len(own) == len(rows), (folder.name, split)  # no id twice
            assert own == english[split], (folder.name, split)


@pytest.fixture(scope="module")
def sib_mirror(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from finetasks_afr.data.mirror import import_raw

    out = tmp_path_factory.mktemp("mt_mirror")
    import_raw(shared_data, out, datasets=["sib200"])
    return out


@pytest.mark.shared_data
@pytest.mark.slow
def test_flores_tasks_pair_real_rows_by_index_id_in_every_language(sib_mirror: Path, shared_data: Path) -> None:
    from lighteval.tasks.lighteval_task import LightevalTask
    from lighteval.tasks.templates.utils.formatting_utils import capitalize, fix_ending_punct
    from lighteval.tasks.templates.utils.translation_literals import TRANSLATION_LITERALS

    from finetasks_afr.prompts.languages import language

    configs = _mirror_tasks(sib_mirror, [flores_mt])
    english = {row["index_id"]: clean(row["text"]) for row in _read_tsv(shared_data / "sib200/eng_Latn/test.tsv")}
    longest = 0
    for iso3 in FLORES_LANGS:
        lang = language(iso3)
        side = translation.side_of(lang)
        rows = _read_tsv(shared_data / "sib200" / lang.codes["sib200"] / "test.tsv")
        own = [clean(row["text"]) for row in rows]
        longest = max(longest, *(len(text) for text in own), *(len(text) for text in english.values()))
        for direction in ("en2xx", "xx2en"):
            docs = {}
            for form in ("ll", "gen"):
                config = configs[f"flores_mt_{direction}_{form}_{iso3}"]
                assert config.hf_repo == str(sib_mirror / "sib200")
                docs[form] = LightevalTask(config).eval_docs()
            assert [(d.query, d.choices) for d in docs["ll"]] == [(d.query, d.choices) for d in docs["gen"]]
            assert len(docs["gen"]) == len(rows) == 204, iso3
            for doc, row, text in zip(docs["gen"], rows, own, strict=True):
                source, target = (
                    (english[row["index_id"]], text) if direction == "en2xx" else (text, english[row["index_id"]])
                )
                labels = ("EN", side.label) if direction == "en2xx" else (side.label, "EN")
                target_side = side if direction == "en2xx" else translation.ENGLISH
                src_side = translation.ENGLISH if direction == "en2xx" else side
                literal = TRANSLATION_LITERALS[src_side.template_language]
                expected_source = capitalize(fix_ending_punct(source, literal))
                assert doc.query == f"{labels[0]}: {expected_source} {labels[1]}:", (iso3, direction)
                gold = capitalize(fix_ending_punct(target, TRANSLATION_LITERALS[target_side.template_language]))
                assert doc.choices == [" " + gold] and doc.gold_index == [0]
    assert longest <= flores_mt.GENERATION_SIZE  # a tokenizer spending one token per character is never cut short


@pytest.mark.slow
@pytest.mark.shared_data
def test_both_sides_of_a_flores_pair_come_from_one_place(shared_data: Path, tmp_path: Path) -> None:
    """A mirror without eng_Latn is not mixed with the hub: the language's tasks then read the hub for both."""
    from finetasks_afr.data.mirror import import_raw

    partial, full = tmp_path / "partial", tmp_path / "full"
    import_raw(shared_data, partial, datasets=["sib200"], configs=["hau_Latn"])
    import_raw(shared_data, full, datasets=["sib200"], configs=["hau_Latn", "eng_Latn"])
    for mirror, expected in ((partial, ("Davlan/sib200", None)), (full, (str(full / "sib200"), None))):
        configs = _mirror_tasks(mirror, [flores_mt])
        for name in ("flores_mt_en2xx_ll_hau", "flores_mt_xx2en_gen_hau"):
            assert (configs[name].hf_repo, configs[name].hf_revision) == expected, (mirror.name, name)
        assert configs["flores_mt_en2xx_gen_yor"].hf_repo == "Davlan/sib200"  # not mirrored at all
    docs = _eval_docs(_mirror_tasks(full, [flores_mt])["flores_mt_en2xx_gen_hau"])
    assert len(docs) == 204 and all(doc.query.startswith("EN: ") and doc.query.endswith(" HA:") for doc in docs)


def _eval_docs(config: Any) -> list[Any]:
    from lighteval.tasks.lighteval_task import LightevalTask

    return LightevalTask(config).eval_docs()


def test_hand_written_rows_render_for_mafand_ntrex_salt(tmp_path: Path) -> None:

    from lighteval.tasks.lighteval_task import LightevalTask
    from lighteval.tasks.prompt_manager import PromptManager

    from tests.hub_rows import hub_rows, write_hub_row_mirror

    assert write_hub_row_mirror(tmp_path, ["mafand", "ntrex", "salt"]) == ["mafand", "ntrex", "salt"]
    configs = _mirror_tasks(tmp_path, [mafand, ntrex, salt])
    expected = {
        "mafand_mt_en2xx_gen_hau": ("EN: ", " HA:"), "mafand_mt_xx2en_ll_pcm": ("PCM: ", " EN:"),
        "mafand_mt_fr2xx_gen_bam": ("FR: ", " BM:"), "mafand_mt_xx2fr_ll_bam": ("BM: ", " FR:"),
        "mafand_mt_en2xx_ll_amh": ("EN: ", " AM:"), "ntrex_mt_en2xx_gen_ven": ("EN: ", " VE:"),
        "ntrex_mt_xx2en_gen_hau": ("HA: ", " EN:"), "salt_mt_en2xx_gen_teo": ("EN: ", " TEO:"),
        "salt_mt_xx2en_ll_lgg": ("LGG: ", " EN:"), "salt_mt_en2xx_ll_ibo": ("EN: ", " IG:"),
    }  # fmt: skip
    manager = PromptManager()
    for name, (head, tail) in expected.items():
        config = configs[name]
        assert config.hf_repo.startswith(str(tmp_path)), name
        docs = LightevalTask(dataclasses.replace(config, num_fewshots=2)).get_docs(max_samples=3)
        assert docs, name
        for doc in docs:
            assert doc.query.startswith(head) and doc.query.endswith(tail), (name, doc.query)
            assert len(doc.choices) == 1 and doc.choices[0].startswith(" ") and doc.choices[0].strip()
            prompt = manager.prepare_prompt(doc)
            assert prompt.endswith(doc.query) and prompt.count(tail.strip()) == 3, (name, prompt)
    # the rows' fields are the ones the pairs read: source and reference come from the right columns
    row = hub_rows("salt")["configs"]["text-all"]["test"][0]
    doc = configs["salt_mt_xx2en_gen_teo"].prompt_function(row, "t")
    assert doc.query == f"TEO: {row['teo_text']} EN:" and doc.choices == [" " + row["eng_target_text"]]
    doc = configs["salt_mt_en2xx_gen_teo"].prompt_function(row, "t")
    assert doc.query == f"EN: {row['eng_source_text']} TEO:"


def test_rows_missing_a_side_are_skipped_and_counted() -> None:
    from finetasks_afr.benchmarks.common import SKIPPED_ROWS

    config = next(c for c in ntrex.tasks() if c.name == "ntrex_mt_en2xx_gen_hau")
    before = SKIPPED_ROWS[config.name]
    assert config.prompt_function({"sentence_eng_Latn": "Hello."}, config.name) is None
    assert config.prompt_function({"sentence_eng_Latn": " ", "sentence_hau_Latn": "Sannu."}, config.name) is None
    assert SKIPPED_ROWS[config.name] == before + 2


# ------------------------------------------------------------------------------------------------ chrF++

PAIRS = [
    ("Yara suna wasa a filin makaranta.", "Yara suna wasa a filin makaranta."),
    ("Kasuwa tana buɗewa ranar Litinin.", "Kasuwa tana buɗewa da wuri ranar Litinin."),
    ("The rain fell.", "Ruwan sama ya sauka da ƙarfi a Kano jiya."),
    ("", "Manoma sun sayar da masararsu a gari."),
    ("Gwamna ya ziyarci asibiti sabo", "Gwamna ya ziyarci sabon asibiti."),
]


def _items(pairs: list[tuple[str, str]]) -> list[Any]:
    from lighteval.metrics.sample_preparator import GenerativeCorpusMetricInput

    return [GenerativeCorpusMetricInput(golds=[" " + ref], preds=[hyp]) for hyp, ref in pairs]


def test_chrf_plus_plus_equals_sacrebleu_corpus_chrf_and_lighteval_stock_does_not() -> None:
    from lighteval.metrics.metrics import Metrics

    hypotheses, references = [h for h, _ in PAIRS], [r for _, r in PAIRS]
    expected = sacrebleu.corpus_chrf(hypotheses, [references], word_order=2).score
    corpus_fn = translation.CHRF_PLUS_PLUS.corpus_level_fn
    assert isinstance(corpus_fn, translation.CorpusChrF) and corpus_fn.word_order == 2
    ours = corpus_fn.compute_corpus(_items(PAIRS))
    assert ours == pytest.approx(expected, abs=TOL)
    assert 0 < ours < 100
    # the sentence-level mean is a different number: the corpus statistic is the one reported
    mean = sum(sacrebleu.sentence_chrf(h, [r], word_order=2).score for h, r in PAIRS) / len(PAIRS)
    assert abs(mean - expected) > 0.1
    stock = Metrics.chrf_plus.value.corpus_level_fn.compute_corpus(_items(PAIRS))  # type: ignore[attr-defined]
    assert abs(stock - expected) > 1.0  # issue 1112: if this fails, upstream fixed it; drop our copy
    assert translation.CHRF_PLUS_PLUS.metric_name == Metrics.chrf_plus.value.metric_name == "chrf++"  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------------------------ pipeline proof

PROBE = "mt_probe_en2xx"
PROBE_GEN = "mt_probe_en2xx_gen"
PROBE_ROWS = {
    "train": [
        {"en": "Good morning.", "xx": "Ẹ káàrọ̀."},
        {"en": "The market is open.", "xx": "Ọjà ti ṣí."},
        {"en": "Thank you very much.", "xx": "Ẹ ṣé púpọ̀."},
    ],
    "test": [
        {"en": "The children are playing.", "xx": "Àwọn ọmọdé ń ṣeré."},
        {"en": "Rain fell in Lagos yesterday.", "xx": "Òjò rọ̀ ní Èkó lánàá."},
        {"en": "We eat rice on Sunday.", "xx": "A máa ń jẹ ìrẹsì ní ọjọ́ Àìkú."},
        {"en": "Where is the hospital?", "xx": "Níbo ni ilé ìwòsàn wà?"},
    ],
}
CORPUS = [f"EN: {row['en']} YO: {row['xx']}" for rows in PROBE_ROWS.values() for row in rows] * 3


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from finetasks_afr.demo.tiny import make_tiny_causal_lm

    return make_tiny_causal_lm(
        tmp_path_factory.mktemp("mt_tiny") / "model", CORPUS, vocab_size=300, hidden_size=32, layers=2, heads=2,
        max_position_embeddings=256, seed=0, train_steps=30, train_seq_len=32,
    )  # fmt: skip


@pytest.fixture(scope="module")
def probe_module(tmp_path_factory: pytest.TempPathFactory) -> types.ModuleType:
    from lighteval.tasks.lighteval_task import LightevalTaskConfig
    from lighteval.utils.language import Language

    from tests.local_dataset import write_local_dataset

    root = write_local_dataset(tmp_path_factory.mktemp("mt_probe"), "mt_probe", PROBE_ROWS)
    yoruba = translation.Side("yor", Language.YORUBA)
    prompt = translation.translation_prompt(
        translation.ENGLISH, yoruba, lambda line: translation.texts(line["en"], line["xx"])
    )
    common: dict[str, Any] = {
        "prompt_function": prompt,
        "hf_repo": str(root),
        "hf_subset": "default",
        "hf_avail_splits": ["train", "test"],
        "evaluation_splits": ["test"],
        "few_shots_split": "train",
    }
    table = [
        LightevalTaskConfig(name=PROBE, metrics=[translation.BITS_PER_BYTE], **common),
        LightevalTaskConfig(
            name=PROBE_GEN, metrics=[translation.CHRF_PLUS_PLUS], generation_size=12, stop_sequence=["\n"], **common
        ),
    ]
    module = types.ModuleType("mt_probe_tasks")
    module.__dict__["TASKS_TABLE"] = table
    return module


def _run(model_dir: Path, module: types.ModuleType, tasks: str, out: Path) -> Any:
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.models.transformers.transformers_model import TransformersModelConfig
    from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

    from finetasks_afr.scoring.lighteval_runtime import custom_tasks_only, prediction_cache_in

    copy = out / "model"
    shutil.copytree(model_dir, copy)
    with custom_tasks_only(), prediction_cache_in(out / "cache"):
        pipeline = Pipeline(
            tasks=tasks,
            pipeline_parameters=PipelineParameters(
                launcher_type=ParallelismManager.ACCELERATE,
                custom_tasks_directory=module,  # type: ignore[arg-type]  # a module works (Registry takes one)
            ),
            evaluation_tracker=EvaluationTracker(output_dir=str(out), save_details=False),
            model_config=TransformersModelConfig(model_name=str(copy), device="cpu", batch_size=8, max_length=256),
        )
        pipeline.evaluate()
    return pipeline


def _direct_logprob(model: Any, context: list[int], continuation: list[int]) -> float:
    import torch

    with torch.no_grad():
        logits = model(input_ids=torch.tensor([context + continuation])).logits[0].double()
    logprobs = torch.log_softmax(logits, dim=-1)
    return sum(float(logprobs[len(context) - 1 + i, token]) for i, token in enumerate(continuation))


def recomputed_bits_per_byte(
    details: Any, tiny_model: Path, check: Callable[[Any, list[int], list[int], str], None], rel: float = 0.0
) -> float:
    """Bits per byte of the references lighteval scored, recomputed with one plain forward pass per document.

    Each document's scored tokens must decode to exactly its reference (leading space included) and their summed
    log-probability must equal lighteval's (`rel` for long sums, which lighteval adds in float32); `check(doc,
    context tokens, continuation tokens, decoded prompt)` holds the caller's own assertions on the document."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    model = AutoModelForCausalLM.from_pretrained(tiny_model, **weights_dtype(torch.float32)).eval()
    total_logprob, total_bytes = 0.0, 0
    for detail in details:
        doc, response = detail.doc, detail.model_response
        reference = doc.choices[0]
        [context] = response.input_tokens if isinstance(response.input_tokens[0], list) else [response.input_tokens]
        [continuation] = response.output_tokens
        assert tokenizer.decode(continuation) == reference  # the tokens scored are exactly the reference
        assert reference.startswith(" ")
        check(doc, list(context), list(continuation), str(tokenizer.decode(context, skip_special_tokens=True)))
        direct = _direct_logprob(model, list(context), list(continuation))
        assert direct == pytest.approx(float(response.logprobs[0]), rel=rel, abs=TOL)
        total_logprob += direct
        total_bytes += len(reference.encode("utf-8"))
    return -total_logprob / total_bytes / math.log(2)


@pytest.mark.slow
@pytest.mark.parametrize("shots", [0, 2])
def test_bits_per_byte_equals_a_direct_forward_pass(
    tiny_model: Path, probe_module: types.ModuleType, tmp_path: Path, shots: int
) -> None:
    pipeline = _run(tiny_model, probe_module, f"{PROBE}|{shots}", tmp_path)
    # get_results() spells the key task:fewshot
    reported = pipeline.get_results()["results"][f"{PROBE}:{shots}"]["bits_per_byte"]
    details = pipeline.get_details()[f"{PROBE}|{shots}"]
    assert len(details) == len(PROBE_ROWS["test"])
    references = {clean(row["xx"]) for row in PROBE_ROWS["test"]}

    def check(doc: Any, context: list[int], continuation: list[int], prompt: str) -> None:
        assert doc.choices[0].strip() in references
        assert prompt.endswith(doc.query) and prompt.count("YO:") == shots + 1

    assert reported == pytest.approx(recomputed_bits_per_byte(details, tiny_model, check), abs=TOL)


@pytest.mark.slow
def test_chrf_plus_plus_through_the_pipeline_equals_sacrebleu(
    tiny_model: Path, probe_module: types.ModuleType, tmp_path: Path
) -> None:
    pipeline = _run(tiny_model, probe_module, f"{PROBE_GEN}|2", tmp_path)
    reported = pipeline.get_results()["results"][f"{PROBE_GEN}:2"]["chrf++"]
    details = pipeline.get_details()[f"{PROBE_GEN}|2"]
    hypotheses = [(detail.model_response.final_text[0] or "").strip() for detail in details]
    references = [detail.doc.choices[0].strip() for detail in details]
    assert len(hypotheses) == 4 and all("\n" not in text for text in hypotheses)
    assert reported == pytest.approx(sacrebleu.corpus_chrf(hypotheses, [references], word_order=2).score, abs=TOL)

"""AfriDiacritics (AfroBench `adr`): restore the diacritics of news sentences (masakhane/diacritics-restoration).

Configs `bbj fon ibo wol yor` (Ghomala', Fon, Igbo, Wolof, Yoruba; ISO 639-3 codes, our codes too), tab-separated
data files `diacritics/{train,validation,test}/<xx>.tsv` published as splits train/dev/test (dataset card at the
pinned revision). Each row holds the sentence stripped of its diacritics in `text` and the original in `target`,
the two fields lm-evaluation-harness's AfroBench reads (EleutherAI/lm-evaluation-harness@4e7e0d47f33bc71070c1d3839
4bafbb52b117163:lm_eval/tasks/afrobench/adr/prompt_1/afridiacritics_yaml#L4-L9 `doc_to_target: target`, test split
test, few-shot split dev; prompt_1/afridiacritics_yor.yaml#L3 `{{text}}`). Evaluation on test, few-shot examples
from dev, as AfroBench.

Tasks: `afridiacritics_ll_<xx>` and `afridiacritics_gen_<xx>` (forms and metrics:
:mod:`finetasks_afr.benchmarks.translation`):
the log-likelihood of the diacritised sentence given the stripped one, reported as its bits per byte (formulation
PPL, lower is better, no chance level), and the greedy restoration scored with chrF++ (AfroBench reports BLEU and
chrF; chrF++ is the suite's one generation metric for rewritten text, and character n-grams see a single restored
tone mark, which word-level BLEU counts only when a whole word comes out right).

Prompt: an English instruction naming the task and the language, then `Without diacritics: <text>` and `With
diacritics:`, the reference after one space (as the translation template's). No lighteval template fits: the
translation template would label both sides with the same language tag and never say that only accents are to
be added. k-shot is the intended use (examples from dev, the instruction written once above them, as lighteval's
PromptManager does): a sentence is short, and the examples show the output format.

Licence: the card says Apache-2.0, but the sentences come from MAFAND-MT (`source_datasets: mafand`), which is
CC-BY-NC-4.0: treat it as NON-COMMERCIAL.

Loading: plain data files, pinned at d23261cf0a773242679502433d9ec8831d80b65b (no loading script). Not verified
offline: the TSV header (the field names are lm-eval's) and the rows themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc

from finetasks_afr.benchmarks.common import skipping
from finetasks_afr.benchmarks.translation import reference_tasks, texts
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import AfricanLanguage, covered_by

DATASET = "afridiacritics"
BENCHMARK = "afridiacritics"
REVISION = "d23261cf0a773242679502433d9ec8831d80b65b"
LANGUAGES = ("bbj", "fon", "ibo", "wol", "yor")
GENERATION_SIZE = 512  # tokens; a news sentence, a token per byte in the worst case (as MAFAND's)
SOURCE_LABEL = "Without diacritics:"
TARGET_LABEL = "With diacritics:"

SOURCES = (
    DatasetSource(
        key=DATASET,
        hub_repo="masakhane/diacritics-restoration",
        revision=REVISION,
        splits=("train", "dev", "test"),
        codes={iso3: iso3 for iso3 in LANGUAGES},
        notes="Licence: Apache-2.0 on the card, but built from MAFAND-MT (CC-BY-NC-4.0): non-commercial. TSV data "
        "files; fields text (stripped) and target (diacritised) as lm-evaluation-harness's AfroBench reads them "
        "(the TSV header itself not verified offline).",
    ),
)


def instruction(language: AfricanLanguage) -> str:
    """The English instruction line naming the task and the language."""
    return f"Restore the diacritics of the following {language.name} text."


def restoration_pair(line: dict) -> tuple[str, str]:
    """Row -> (text without diacritics, diacritised reference), both cleaned; ValueError when either is empty."""
    return texts(line["text"], line["target"])


def restoration_prompt(language: AfricanLanguage, name: str) -> Callable[[dict, str], Doc | None]:
    """Instruction, the stripped text and the label the reference follows (after one space)."""
    adapter = skipping(name, restoration_pair)
    words = instruction(language)

    def prompt(line: dict, task_name: str) -> Doc | None:
        pair = adapter(line)
        if pair is None:
            return None
        return Doc(
            task_name=task_name,
            query=f"{words}\n\n{SOURCE_LABEL} {pair[0]}\n{TARGET_LABEL}",
            choices=[" " + pair[1]],
            gold_index=[0],
            instruction=words,
        )

    return prompt


def tasks() -> list[LightevalTaskConfig]:
    configs = []
    for language in covered_by(DATASET):
        configs += reference_tasks(
            benchmark=BENCHMARK,
            dataset=DATASET,
            subset=language.codes[DATASET],
            language=language,
            prompt_for=partial(restoration_prompt, language),
            evaluation_splits=("test",),
            few_shots_split="dev",
            hf_avail_splits=("train", "dev", "test"),
            generation_size=GENERATION_SIZE,
        )
    return configs

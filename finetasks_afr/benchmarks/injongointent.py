"""InjongoIntent: intent detection on user utterances, 40 intents, 16 African languages and English (NLU).

Two families read the same rows. `injongointent` offers all 40 intents (CF only: 40 options are too many for
letters) with random baseline 1/40, as lm-evaluation-harness's injongointent prompts do. `injongointent4` offers
the gold intent and three distractors drawn per row (CF, MCF and hybrid), baseline 1/4: a 40-way log-likelihood
ranking is hard for small models, and a 4-way one gives a small model's early signal room above chance. The two
have different benchmark names because their baselines differ.

The distractors are drawn from the 39 other intents by a generator seeded with the SHA-256 of the row's cleaned
text, and the four are shuffled by it: the same row gets the same options in every process, whatever
PYTHONHASHSEED (Python's `hash` is never used), and the gold's position is uniform over rows. The text, not
`example_id`, seeds it because the published ids repeat across intents (every intent block restarts its count).

Intents are shown as words (`book_flight` -> "book flight"): a log-likelihood task scores the option text as a
continuation, and underscores are not how the words occur in running text, so they would add a tokenisation
artefact to every option; lm-evaluation-harness keeps the underscores because its generative variant must match
the label string exactly. Words are in English in both prompt variants (no human translations of the intent
names exist here).

Where the options are shown. `injongointent` offers the same 40 intents to every document, so its instruction
names them once. `injongointent4` offers each document its own four, and lighteval prints the instruction once,
at the top of the prompt, above the few-shot examples: an instruction naming the evaluated document's four would
be contradicted by every example, whose answer is usually not among them. So the instruction names no set
("... as one of the intents listed with it"), and each document carries its own options inside its query, where
every few-shot example shows them too: in MCF and hybrid the template's lettered options already are the
document's four; in CF, which prints no options, the question body is the text followed by a line
"Intents: a, b, c, d" (`adapter4_cf`). Every example's answer is then one of the options shown with it, at every
k; the intent words and their order are those of `four_options`, unchanged.

English has train and test only (no dev file in the release): its few-shot examples come from train, as in
lm-evaluation-harness's injongointent_eng.yaml; every other language takes them from validation.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.templates.multichoice import get_mcq_prompt_function

from finetasks_afr.benchmarks.common import Family, family_tasks, label_index, required_text
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import AfricanLanguage, covered_by, same_codes

INTENTS = (
    "alarm", "balance", "bill_balance", "book_flight", "book_hotel", "calendar_update", "cancel_reservation",
    "car_rental", "confirm_reservation", "cook_time", "exchange_rate", "food_last", "freeze_account",
    "ingredients_list", "interest_rate", "international_visa", "make_call", "meal_suggestion", "min_payment",
    "pay_bill", "pin_change", "play_music", "plug_type", "recipe", "restaurant_reservation", "restaurant_reviews",
    "restaurant_suggestion", "share_location", "shopping_list_update", "spending_history", "text", "time",
    "timezone", "transactions", "transfer", "translate", "travel_notification", "travel_suggestion",
    "update_playlist", "weather",
)  # fmt: skip
"""lm-evaluation-harness's doc_to_choice order (prompt_1/injongointent); rows carry these names in `intent`."""

N_OPTIONS = 4  # injongointent4: the gold intent and three distractors
SEED_SALT = b"injongointent4\x00"


def words(intent: str) -> str:
    """The intent as the prompt shows it: `book_flight` -> "book flight"."""
    return intent.replace("_", " ")


def instruction(options: list[str]) -> str:
    """The instruction of `injongointent`: the same 40 intents for every document, so named once, here."""
    return "Classify the intent of the user's message as one of: " + ", ".join(options) + "."


INSTRUCTION4 = "Classify the intent of the user's message as one of the intents listed with it."
"""The instruction of `injongointent4`: no document-specific set (see the module docstring)."""
OPTIONS_WORD = "Intents"


def with_options(text: str, options: list[str]) -> str:
    """The CF question body of `injongointent4`: the text, then the document's own four options on a line."""
    return f"{text}\n{OPTIONS_WORD}: " + ", ".join(options)


SOURCES = (
    DatasetSource(
        key="injongointent",
        hub_repo="masakhane/InjongoIntent",
        revision="043a407643d9ef670eb4009a4070ac07ca5145ff",
        splits=("train", "validation", "test"),
        codes=same_codes("amh eng ewe hau ibo kin lin lug orm sna sot swa twi wol xho yor zul"),
        notes="Pinned to the README/configs commit seen on the hub. Configs = ISO 639-3 codes as in "
        "lm-evaluation-harness's injongointent_<lang>.yaml (dataset_name); fields `text` and `intent` (one of 40 "
        "names) as its doc_to_text/doc_to_target. English has train and test only (no dev.jsonl): few-shot from "
        "train, as lm-eval's injongointent_eng.yaml. Row schema beyond text/intent taken from the INJONGO "
        "authors' cleaned-dataset jsonl (McGill-NLP/Injongo); not read from the hub at the pin.",
        text_field=("text", "test"),
    ),
)


def adapter(line: dict) -> dict:
    """All 40 intents offered (CF)."""
    options = [words(intent) for intent in INTENTS]
    return {
        "instruction": instruction(options),
        "question": required_text(line, "text"),
        "choices": options,
        "gold_idx": label_index(line["intent"], INTENTS),
    }


def four_options(text: str, gold: str) -> list[str]:
    """The gold intent and three distractors, shuffled, as a function of the cleaned text only (and the gold)."""
    seed = int.from_bytes(hashlib.sha256(SEED_SALT + text.encode("utf-8")).digest()[:8], "big")
    rng = random.Random(seed)
    options = [gold, *rng.sample([intent for intent in INTENTS if intent != gold], N_OPTIONS - 1)]
    rng.shuffle(options)
    return options


def adapter4(line: dict) -> dict:
    """The gold intent and three seeded distractors (MCF, hybrid: the template letters the document's options)."""
    text = required_text(line, "text")
    gold = INTENTS[label_index(line["intent"], INTENTS)]
    options = four_options(text, gold)
    shown = [words(intent) for intent in options]
    return {"instruction": INSTRUCTION4, "question": text, "choices": shown, "gold_idx": options.index(gold)}


def adapter4_cf(line: dict) -> dict:
    """As `adapter4`, with the options written into the question body (CF prints no options of its own)."""
    row = adapter4(line)
    return {**row, "question": with_options(row["question"], row["choices"])}


def few_shots_split_for(language: AfricanLanguage) -> str:
    return "train" if language.iso3 == "eng" else "validation"


def _family(benchmark: str, row_adapter: Callable[[dict], dict], baseline: float, forms: tuple[str, ...]) -> Family:
    return Family(
        benchmark=benchmark,
        dataset="injongointent",
        category="NLU",
        template=get_mcq_prompt_function,
        adapter=row_adapter,
        random_baseline=baseline,
        evaluation_splits=("test",),
        few_shots_split="validation",
        few_shots_split_for=few_shots_split_for,
        hf_avail_splits=("train", "validation", "test"),
        formulations=forms,
    )


FAMILY = _family("injongointent", adapter, 1 / len(INTENTS), ("cf",))
FAMILY4_CF = _family("injongointent4", adapter4_cf, 1 / N_OPTIONS, ("cf",))
FAMILY4 = _family("injongointent4", adapter4, 1 / N_OPTIONS, ("mcf", "hybrid"))


def tasks() -> list[LightevalTaskConfig]:
    languages = covered_by("injongointent")
    return family_tasks(FAMILY, languages) + family_tasks(FAMILY4_CF, languages) + family_tasks(FAMILY4, languages)

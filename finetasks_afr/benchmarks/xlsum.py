"""XL-Sum: abstractive summarisation of BBC news articles (csebuetnlp/xlsum), its ten African languages.

Configs `amharic hausa igbo kirundi oromo pidgin somali swahili tigrinya yoruba` (AfroBench's African subset;
arabic and telugu left out); each row is `{id, url, title, summary, text}` (the article is `text`, the reference
summary `summary`, as lm-evaluation-harness's AfroBench reads them: EleutherAI/lm-evaluation-harness@4e7e0d47f33bc
71070c1d38394bafbb52b117163:lm_eval/tasks/afrobench/xlsum/prompt_1/xlsum_amharic.yaml#L2-L7). Splits train/
validation/test; evaluation on test, few-shot examples (when asked for) from validation, as AfroBench
(lm_eval/tasks/afrobench/xlsum/prompt_1/xlsum#L5-L13 at that commit).

Tasks: `xlsum_ll_<xx>` and `xlsum_gen_<xx>` (forms and metrics: :mod:`finetasks_afr.benchmarks.translation`): the
log-likelihood of the reference summary given the article, reported as the summary's bits per byte (formulation
PPL, lower is better, no chance level), and a greedy summary scored with chrF++ against the reference.

Why chrF++ and not ROUGE-L (AfroBench's metric): lighteval's `Metrics.rougeL` is `rouge_score` with its default
tokenizer, which lower-cases and keeps only `[a-z0-9]` runs, so an Amharic or Tigrinya summary (Ge'ez script) has
no tokens at all and scores 0 whatever the model writes, and Yoruba or Igbo words lose every letter with a diacritic
(tests/benchmarks/test_summarisation_diacritics.py shows both). XL-Sum's authors score with a multilingual fork of rouge
(language-specific tokenizers and stemmers) that lighteval does not ship. chrF++ works on characters and
whitespace-split words of any script.

Prompt: lighteval's own XSum prompt (`lighteval.tasks.tasks.summarization.xsum_prompt`: "Document: ...\\n\\nA
one-sentence summary of the above document is:"; XL-Sum follows XSum's construction, a BBC article and its one-
or two-sentence introduction as the summary), under an English instruction line naming the language (lighteval 0.13
has no summarisation template in `lighteval.tasks.templates` or `tasks.multilingual`); the reference follows
after one space, as the translation template's does, so its first word is scored as the model would write it.
The article is cut to at most :data:`ARTICLE_MAX_CHARS` characters at the last whitespace before the limit
(:func:`truncate_article`): articles run to thousands of words, and a byte-level tokenizer can spend a token per
byte of Ge'ez script (three bytes a character), so a whole article would not fit a small model's context. The
opening of a BBC article carries what the summary states, so the cut keeps the task answerable. 0-shot is the
intended use: k examples would multiply the context by k + 1.

Licence: CC-BY-NC-SA-4.0 (dataset card): NON-COMMERCIAL use only, share-alike.

Loading: the repository at its pinned revision 8c7cfa67e9dcf4c03a15c83ef3ce2004c3041f96 is a loading script
(`xlsum.py`), which datasets>=4 refuses; the tasks read the hub's parquet export of it (revision
`refs/convert/parquet`, `<config>/<split>/*.parquet`, hub form `parquet-branch`), which is not a pinned commit.
That branch has no README naming the configs, and datasets 5 turns such a tree into one `default` config, so each
task reads its config's folder (`data_dir=<config>`; :mod:`finetasks_afr.data.sources`, "Hub forms";
tests/data/test_published_layouts.py loads a replica of that layout). `finetasks-afr data mirror` mirrors it the same
way, config by config.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc
from lighteval.tasks.tasks.summarization import xsum_prompt

from finetasks_afr.benchmarks.common import clean, skipping
from finetasks_afr.benchmarks.translation import reference_tasks, texts
from finetasks_afr.data.sources import DatasetSource
from finetasks_afr.prompts.languages import AfricanLanguage, covered_by

DATASET = "xlsum"
SCRIPT_REVISION = "8c7cfa67e9dcf4c03a15c83ef3ce2004c3041f96"
PARQUET_REVISION = "refs/convert/parquet"
CONFIGS = {
    "amh": "amharic",
    "hau": "hausa",
    "ibo": "igbo",
    "run": "kirundi",
    "orm": "oromo",
    "pcm": "pidgin",
    "som": "somali",
    "swa": "swahili",
    "tir": "tigrinya",
    "yor": "yoruba",
}
ARTICLE_MAX_CHARS = 1500
GENERATION_SIZE = 256  # tokens; a summary is one or two sentences (the longest few hundred characters)

SOURCES = (
    DatasetSource(
        key=DATASET,
        hub_repo="csebuetnlp/xlsum",
        revision=PARQUET_REVISION,
        splits=("train", "validation", "test"),
        codes=CONFIGS,
        notes=f"Licence CC-BY-NC-SA-4.0: non-commercial, share-alike. Revision {SCRIPT_REVISION} is a loading "
        "script (refused by datasets>=4); read from its parquet export refs/convert/parquet (a moving ref, not a "
        "pin), laid out <config>/<split>/*.parquet without a README, so each config is read as its folder "
        "(data_dir=<config>: datasets sees one 'default' config there). African configs only (AfroBench's ten).",
        config_names=tuple(CONFIGS.values()),
        hub_form="parquet-branch",
    ),
)


def truncate_article(text: str, limit: int = ARTICLE_MAX_CHARS) -> str:
    """The article's first `limit` characters at most, cut at the last whitespace at or before the limit (a word
    is never split); a first word longer than the limit is cut at the limit. Text already short is unchanged."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit + 1)
    return (text[:cut] if cut > 0 else text[:limit]).rstrip()


def instruction(language: AfricanLanguage) -> str:
    """The English instruction line: which language the article is in, and that the summary is wanted in it."""
    return f"Summarise the following {language.name} news article in {language.name}."


def summary_pair(line: dict) -> tuple[str, str]:
    """Row -> (article truncated, reference summary), both cleaned; ValueError when either is empty."""
    article, summary = texts(line["text"], line["summary"])
    return truncate_article(article), summary


def summary_prompt(language: AfricanLanguage, name: str) -> Callable[[dict, str], Doc | None]:
    """lighteval's XSum prompt over the truncated article, the instruction in front, the summary after a space."""
    adapter = skipping(name, summary_pair)
    words = instruction(language)

    def prompt(line: dict, task_name: str) -> Doc | None:
        pair = adapter(line)
        if pair is None:
            return None
        doc = xsum_prompt({"document": pair[0], "summary": pair[1]}, task_name)
        doc.query = f"{words}\n\n{doc.query}"
        doc.instruction = words
        doc.choices = [" " + clean(choice) for choice in doc.choices]
        doc.gold_index = [0]
        return doc

    return prompt


def tasks() -> list[LightevalTaskConfig]:
    configs = []
    for language in covered_by(DATASET):
        configs += reference_tasks(
            benchmark=DATASET,
            dataset=DATASET,
            subset=language.codes[DATASET],
            language=language,
            prompt_for=partial(summary_prompt, language),
            evaluation_splits=("test",),
            few_shots_split="validation",
            hf_avail_splits=("train", "validation", "test"),
            generation_size=GENERATION_SIZE,
        )
    return configs

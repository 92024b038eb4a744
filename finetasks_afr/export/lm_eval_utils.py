"""The `utils.py` of an exported lm-eval task folder, copied there verbatim by `finetasks-afr export lm-eval`.

It runs inside a user's lm-eval environment, where this project is not installed: it imports the standard library
and lm-eval's own dependencies only (`datasets`, `sacrebleu`; spaCy where the user has it). What it holds:

- `load_docs`, lm-eval's `custom_dataset` hook: a task's rendered documents from the JSON lines beside its YAML.
- The metrics lm-eval has not, as this project computes them:
  `choice_loglikelihood` and `accuracy_over_choices` (partial scoring: one `loglikelihood` request per (document,
  choice), each with its own context and continuation, folded back into one answer per document: the choice with
  the highest log-likelihood, raw or per character, the first on a tie, as numpy's argmax in lighteval);
  `reference_bits_per_byte` (a reference's bits per byte given its prompt: lm-eval's `bits_per_byte` aggregation,
  fed from a `loglikelihood` request, as the suite's translation log-likelihood tasks are);
  `chrf_plus_plus` (corpus chrF++, sacreBLEU's `CHRF(word_order=2)` with one reference stream, as
  `finetasks_afr.benchmarks.translation.CorpusChrF`);
  `f1_and_prefix_match` (lighteval's `MultilingualQuasiF1ScoreMetric` and `MultilingualQuasiExactMatchMetric(...,
  "prefix")`: the language's articles removed, punctuation removed, lower-cased, split into words, then a bag-of-
  words F1 and a prefix match, the best over the golds). lighteval splits words with spaCy's blank tokenizer for
  the languages it has one for; a document names that language (`word_split`), and spaCy is used when installed,
  else whitespace, which differs only where spaCy splits a word inside (digits from units, `100km`).

The project's tests import this file and compare every function against lighteval's on real documents.
"""

from __future__ import annotations

import json
import re
import string
import sys
import unicodedata
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

PUNCTUATION = frozenset(
    {chr(i) for i in range(sys.maxunicode) if unicodedata.category(chr(i)).startswith("P")} | set(string.punctuation)
)


def load_docs(data_file: str, **_: Any) -> Any:
    """lm-eval's `custom_dataset` hook: the documents of `data_file` (a name in this folder) as the test split."""
    import datasets

    path = Path(__file__).resolve().parent / data_file
    with path.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})


def reference_bits_per_byte(doc: dict, results: Sequence[tuple[float, bool]]) -> dict[str, tuple[float, int]]:
    """A `loglikelihood` task's `process_results`: (log-probability, UTF-8 bytes) of the scored reference, summed
    over the corpus and divided by lm-eval's `bits_per_byte` aggregation (-sum(ll) / sum(bytes) / ln 2)."""
    loglikelihood = float(results[0][0])
    return {"bits_per_byte": (loglikelihood, len(doc["continuation"].encode("utf-8")))}


def choice_loglikelihood(doc: dict, results: Sequence[tuple[float, bool]]) -> dict[str, tuple[Any, ...]]:
    """A per-choice `loglikelihood` task's `process_results`: (document, choice, choices, log-likelihood, gold,
    characters of the continuation) for `acc` and `acc_norm`."""
    item = (doc["document"], doc["choice"], doc["choices"], float(results[0][0]), doc["gold"], len(doc["continuation"]))
    return {"acc": item, "acc_norm": item}


def _right_share(items: Sequence[tuple[Any, ...]], by_characters: bool) -> float:
    by_document: dict[Any, dict[int, float]] = {}
    expected: dict[Any, tuple[int, int]] = {}
    for document, choice, choices, loglikelihood, gold, characters in items:
        score = loglikelihood / characters if by_characters else loglikelihood
        by_document.setdefault(document, {})[int(choice)] = score
        expected[document] = (int(choices), int(gold))
    right = 0
    for document, scores in by_document.items():
        choices, gold = expected[document]
        if sorted(scores) != list(range(choices)):
            raise ValueError(f"document {document}: log-likelihoods of choices {sorted(scores)}, expected {choices}")
        right += int(max(range(choices), key=scores.__getitem__) == gold)
    return right / len(by_document)


def accuracy_over_choices(items: Sequence[tuple[Any, ...]]) -> float:
    """The share of documents whose choice with the highest log-likelihood is the gold one (the first on a tie); a
    document missing a choice (lm-eval's --limit cut it) is an error, not a silent miss."""
    return _right_share(items, by_characters=False)


def normalised_accuracy_over_choices(items: Sequence[tuple[Any, ...]]) -> float:
    """As `accuracy_over_choices`, each log-likelihood divided by its continuation's characters (lighteval's
    `LogProbCharNorm`: the leading space counted)."""
    return _right_share(items, by_characters=True)


def chrf_plus_plus_results(doc: dict, results: Sequence[str]) -> dict[str, tuple[str, str]]:
    """A `generate_until` task's `process_results` for chrF++: (generation, the one reference), for the corpus."""
    if len(doc["golds"]) != 1:
        raise ValueError(f"chrF++: expected one reference per document, got {len(doc['golds'])}: {doc['golds']!r}")
    return {"chrf++": (results[0], doc["golds"][0])}


def chrf_plus_plus(items: Sequence[tuple[str, str]]) -> float:
    """Corpus chrF++ over (generation, reference) pairs, one reference stream, both stripped."""
    import sacrebleu

    hypotheses = [hypothesis.strip() for hypothesis, _ in items]
    references = [reference.strip() for _, reference in items]
    return float(sacrebleu.CHRF(word_order=2).corpus_score(hypotheses, [references]).score)


@cache
def _spacy_tokenizer(code: str) -> Any:
    try:
        import spacy
    except ImportError:
        return None
    nlp = spacy.blank(code)
    nlp.add_pipe("sentencizer")
    return nlp


def words(text: str, word_split: str) -> list[str]:
    """`text` split into words: spaCy's blank tokenizer for `word_split` `spacy:<code>` when spaCy is installed
    (lighteval's `SpaCyTokenizer`), else on whitespace; empty pieces dropped, each stripped."""
    nlp = _spacy_tokenizer(word_split.removeprefix("spacy:")) if word_split.startswith("spacy:") else None
    if nlp is None:
        pieces = text.split()
    else:
        nlp.max_length = len(text) + 10
        pieces = [token.text for token in nlp(text, disable=["parser", "tagger", "ner"])]
    return [piece.strip() for piece in pieces if piece.strip()]


def normalise(text: str, articles: str, word_split: str) -> str:
    """lighteval's multilingual normaliser: articles (a regex, or none), punctuation, case, words joined by a space."""
    if articles:
        text = re.sub(articles, " ", text)
    text = "".join(character for character in text if character not in PUNCTUATION).lower()
    return " ".join(words(text, word_split))


def bag_of_words_f1(gold: str, prediction: str) -> float:
    """nltk's `f_measure` (alpha 0.5) of the two sets of words, 0.0 where it is undefined (lighteval's F1)."""
    reference, test = set(gold.split()), set(prediction.split())
    if not reference or not test:
        return 0.0
    overlap = len(reference & test)
    precision, recall = overlap / len(test), overlap / len(reference)
    if precision == 0 or recall == 0:
        return 0.0
    return 1.0 / (0.5 / precision + 0.5 / recall)


def f1_and_prefix_match(doc: dict, results: Sequence[str]) -> dict[str, float]:
    """A `generate_until` task's `process_results`: `f1_<lang>` and `exact_match_<lang>_prefix`, the best over the
    document's golds, each string normalised as lighteval does for the language the answers are in."""
    articles, word_split, language = doc["articles"], doc["word_split"], doc["answers_in"]
    prediction = results[0]
    f1 = max(
        bag_of_words_f1(normalise(gold, articles, word_split), normalise(prediction, articles, word_split))
        for gold in doc["golds"]
    )
    prefix = max(_prefix_match(gold, prediction, articles, word_split) for gold in doc["golds"])
    return {f"f1_{language}": f1, f"exact_match_{language}_prefix": float(prefix)}


def _prefix_match(gold: str, prediction: str, articles: str, word_split: str) -> int:
    if not prediction:
        return 0
    return int(normalise(prediction, articles, word_split).startswith(normalise(gold, articles, word_split)))

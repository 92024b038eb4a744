"""A synthetic multilingual world for the embedded end-to-end demo: corpus, evaluation tasks, truth.

Three invented languages with ISO 639-3 private-use codes (`qaa`, `qab`, `qac`), each with its own lexicon built
from its own syllables (disjoint consonants, so their BPE tokens differ), and the same regularities:

- facts (GK): 140 people (default size) each live in one of 8 towns and belong to one of 8 clans, stated in the
  corpus in several framings, among them quiz pages in the `Question: ...?\nAnswer: ...` form of lighteval's
  multiple-choice template. Person i is mentioned with Zipf weight (i + 4) ** -0.8, so facts are learnt one after
  the other and the rare ones not at all by the end of training: graded difficulty, and a language's share of
  the mix decides how far down the ranking a model gets.
- agreement (RES): 4 noun classes; adjectives and verbs take their noun's class prefix, nouns are unmarked, so a
  noun's class is learnt noun by noun (128 nouns, Zipf-weighted). The test items pair nouns with verbs they never
  occur with in the corpus: the model must apply its knowledge of the noun's class.
- a common corpus per language: facts about 132 other people, in the same share of EVERY mix.

The mixes (`MIXES`) are a Latin square: each language's main corpus makes 0.5 of one mix, 0.3 of another and
0.2 of the third (of what the common corpora leave), so every language has a designed best mix and the mixes are
strictly ordered on each.

Evaluation datasets (`root/datasets/<family>/`, one config per language, splits `test` and `train`, few-shot):

- `facts`, `agreement` (learnable): 256 test items each by default, spanning the frequency ranking; the answer
  restates the subject ("Where does X live?" -> "X Town"), so the choice that matters follows the words that
  decide it, as in the corpus.
- `common` (GK, noise-ordered): facts items about the common people: learnable, but equally present in every
  mix, so which mix is best at it is noise by design.
- `randlabel` (NLU, random label): facts-shaped items whose gold index is a seeded random draw, independent of the
  content; the draw is taken from the first seed whose golds agree with the true answer on a hair less than
  chance's share of the items, so a model that learns the facts cannot lift it above chance by the draw's luck.
- `tiny` (GK, too small): 8 facts items spread over the ranking: learnable, but too few to be stable.
- `text` (GEN, perplexity, split `test` only): 160 held-out sentences per language, drawn by the corpus' own
  writer from its own random stream, keeping only sentences that are no line of the language's corpora
  (`heldout_sentences`). The models learn the language, so its bits per byte should fall steadily.

The MCF (lettered) forms of the learnable families are expected at chance (`mcf_at_chance`): models this small do
not learn to answer with a letter. Every gold position (letter) is balanced, so an MCF model that always answers
one letter scores chance exactly.

Everything is a pure function of the seed: building twice gives byte-identical files. Every file is written
atomically (`analysis.base.io`), the datasets by
`finetasks_afr.data.local_dataset` (data files named after their content);
`world.json` is written last, so a world without it is incomplete.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any, Literal

from analysis.base.io import atomic_write_text
from finetasks_afr.data.local_dataset import Layout, write_dataset_folder

LANGUAGES: tuple[str, ...] = ("qaa", "qab", "qac")
# The main corpus of each language enters each mix in these shares: a Latin square, so every language is dominant
# (0.5) in exactly one mix and the three mixes are strictly ordered on every language (0.5 > 0.3 > 0.2).
MIXES: dict[str, dict[str, float]] = {
    "mix-a": {"qaa": 0.5, "qab": 0.3, "qac": 0.2},
    "mix-b": {"qaa": 0.2, "qab": 0.5, "qac": 0.3},
    "mix-c": {"qaa": 0.3, "qab": 0.2, "qac": 0.5},
}
# Besides its main corpus, every language has a small `common` corpus (facts about other people) that enters EVERY
# mix in this same share of the documents: the `common` tasks are learnable, but which mix is best at them is noise.
COMMON_SHARE = 0.08
FORMULATIONS: tuple[str, ...] = ("CF", "MCF")
PPL = "PPL"  # the perplexity formulation (finetasks_afr.benchmarks.perplexity.FORMULATION; no lighteval import here)
TEXT_FIELD = "text"  # the field the perplexity task scores
N_CHOICES = 4
MANIFEST = "world.json"
WORLD_VERSION = 3  # 2: the `text` (perplexity) family; 3: three mixes, graded difficulty, the `common` family

Kind = Literal["learnable", "random_label", "too_small", "learnable_ppl", "noise_ordered", "mcf_at_chance"]
# The MCF (lettered) form of a learnable family: models this small never learn to answer with a letter (FineTasks
# sees MCF emerge late in training), so the designed verdict is "at chance", not "learnable".
MCF_AT_CHANCE: Kind = "mcf_at_chance"
_LEARNABLE_KINDS = ("learnable", "too_small", "noise_ordered")


@dataclass(frozen=True)
class Family:
    """One kind of evaluation dataset: its benchmark name, category and what the analysis should conclude."""

    name: str  # dataset folder under root/datasets and the task-name stem (`demo<name>_...`)
    benchmark: str
    category: str
    kind: Kind
    formulations: tuple[str, ...] = FORMULATIONS

    @property
    def splits(self) -> tuple[str, ...]:
        """Dataset splits: multiple choice has a few-shot split; perplexity is 0-shot (few-shot text would be scored
        but not counted by the metrics), so it has `test` only."""
        return ("test",) if self.formulations == (PPL,) else ("test", "train")


FAMILIES: tuple[Family, ...] = (
    # MCF only where it shows something: the lettered form of the main learnable family (at chance at this scale)
    # and of the random-label control; the other families in CF, which is what the selection keeps here.
    Family("facts", "demo-facts", "GK", "learnable"),
    Family("agreement", "demo-agreement", "RES", "learnable", ("CF",)),
    Family("randlabel", "demo-randlabel", "NLU", "random_label"),
    Family("tiny", "demo-tiny", "GK", "too_small", ("CF",)),
    Family("common", "demo-common", "GK", "noise_ordered", ("CF",)),
    Family("text", "demo-text", "GEN", "learnable_ppl", (PPL,)),
)

# Per language: consonants and vowels of its syllables (disjoint consonants, so no word is shared).
_PHONOLOGY: dict[str, tuple[str, str]] = {
    "qaa": ("ktmnls", "aiu"),
    "qab": ("bdgrzv", "eoa"),
    "qac": ("pfhwyj", "oei"),
}
N_TOWNS = 8
N_CLANS = 8
N_CLASSES = 4
NOUNS_PER_CLASS = 32
N_VERBS = 16
N_ADJECTIVES = 8
TINY_ITEMS = 8  # a multiple of N_CHOICES: balanced letters, so MCF's always-A scores chance exactly
TEXT_ITEMS = 160  # held-out sentences per language (perplexity task): cheap to score, enough to average
HELDOUT_DRAWS = 200_000  # at most this many sentence draws to find them (a few thousand suffice at default size)
TRAIN_ITEMS = 8  # few-shot split size per family
# Graded difficulty: person i of the main population is mentioned with weight (i + offset) ** -exponent, and the
# test asks about the people down the whole ranking, so at the end of training the models know the frequent people
# and not yet the rare ones (a language's share of the mix decides how far down they get).
ITEMS_PER_TASK = 256  # facts, agreement, randlabel, common: enough items that seed noise leaves SNR >= 20
AGREEMENT_ITEMS_PER_NOUN = 2
PERSON_ZIPF_OFFSET = 4.0
PERSON_ZIPF_EXPONENT = 0.8
NOUN_ZIPF_OFFSET = 3.0
NOUN_ZIPF_EXPONENT = 0.8
COMMON_DOCS_FRACTION = 0.35  # common-corpus documents per language, as a fraction of the main corpus' documents


@dataclass(frozen=True)
class DemoTask:
    """One lighteval task of the demo, with what the analysis needs and the truth it should recover."""

    name: str  # demo<family>_<lang>_<cf|mcf>, or demo<family>_<lang> for perplexity
    benchmark: str
    language: str
    category: str
    formulation: str  # "CF" | "MCF" | "PPL"
    random_baseline: float | None  # None: no chance level (perplexity; NaN in TASK_INFO, null in the table)
    kind: str  # "learnable" | "random_label" | "too_small" | "learnable_ppl"
    subset: str  # dataset config name (the language code)
    dataset: str = ""  # folder under root/datasets (the family name)


class StaleWorldError(ValueError):
    """A world built by an older version of this module (other tasks or files): rebuild it."""


def manifest_version(root: Path) -> int | None:
    """The version in `root/world.json`, None when there is no (readable) manifest."""
    try:
        return json.loads((Path(root) / MANIFEST).read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError):
        return None


@dataclass
class World:
    """A built world: where it lives, its languages, tasks and data mixes (read back from `world.json`)."""

    root: Path
    languages: tuple[str, ...]
    tasks: list[DemoTask]
    mixes: dict[str, dict[str, float]]
    seed: int = 0
    items_per_task: int = ITEMS_PER_TASK
    docs_per_language: int = 0
    data_files: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)  # family -> lang -> split -> path
    common_share: float = 0.0  # each language's common corpus: this share of every mix's documents

    @classmethod
    def load(cls, root: Path) -> World:
        """The world built under `root`; a clear error when `world.json` is missing (not built, or half built)."""
        root = Path(root).resolve()  # absolute: the tasks' hf_repo must not depend on the working directory
        path = root / MANIFEST
        if not path.is_file():
            raise FileNotFoundError(f"no demo world at {root}: {path} is missing (build it with build_world)")
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != WORLD_VERSION:
            raise StaleWorldError(
                f"the demo world at {root} has version {data.get('version')}, this code needs {WORLD_VERSION}; "
                "fix: rebuild it with build_world (the demo does this itself)"
            )
        return cls(
            root=root,
            languages=tuple(data["languages"]),
            tasks=[DemoTask(**task) for task in data["tasks"]],
            mixes={mix: dict(shares) for mix, shares in data["mixes"].items()},
            seed=int(data["seed"]),
            items_per_task=int(data["items_per_task"]),
            docs_per_language=int(data["docs_per_language"]),
            data_files=data.get("data_files", {}),
            common_share=float(data["common_share"]),
        )

    def dataset_dir(self, family: str) -> Path:
        """The local dataset directory (README.md with `configs:`) of a family, for `hf_repo`."""
        return self.root / "datasets" / family

    def corpus_path(self, language: str) -> Path:
        return self.root / "corpus" / f"{language}.txt"

    def common_corpus_path(self, language: str) -> Path:
        return self.root / "corpus" / f"{language}-common.txt"

    def task(self, name: str) -> DemoTask:
        for task in self.tasks:
            if task.name == name:
                return task
        raise KeyError(f"no demo task {name!r} in {self.root}")


# ------------------------------------------------------------------------------------------------ lexicon


@dataclass(frozen=True)
class Lexicon:
    """The words of one invented language, all generated from its syllables."""

    language: str
    persons: tuple[str, ...]
    towns: tuple[str, ...]
    clans: tuple[str, ...]
    words: dict[str, str]  # function words: live, in, where, is, of, which, kin, also, and times t0..t2
    adj_prefixes: tuple[str, ...]  # per class (nouns are unmarked: a noun's class is learnt noun by noun)
    verb_prefixes: tuple[str, ...]
    noun_stems: tuple[tuple[str, ...], ...]  # per class
    adj_stems: tuple[str, ...]
    verb_stems: tuple[str, ...]

    def noun(self, cls: int, index: int) -> str:
        return self.noun_stems[cls][index].capitalize()

    def adjective(self, cls: int, stem: int) -> str:
        return self.adj_prefixes[cls] + self.adj_stems[stem]

    def verb(self, cls: int, stem: int) -> str:
        return self.verb_prefixes[cls] + self.verb_stems[stem]

    def forms(self) -> list[str]:
        """Every word form the corpus uses, case-folded (they must all differ)."""
        classes = range(N_CLASSES)
        inflected = [self.noun(c, n) for c in classes for n in range(len(self.noun_stems[c]))]
        inflected += [self.adjective(c, a) for c in classes for a in range(len(self.adj_stems))]
        inflected += [self.verb(c, v) for c in classes for v in range(len(self.verb_stems))]
        return [w.lower() for w in (*self.persons, *self.towns, *self.clans, *self.words.values(), *inflected)]


class _WordMaker:
    """Unique words of a language: syllables of its consonants and vowels, never the same word twice."""

    def __init__(self, rng: random.Random, consonants: str, vowels: str) -> None:
        self.rng, self.consonants, self.vowels = rng, consonants, vowels
        self.used: set[str] = set()

    def syllable(self) -> str:
        return self.rng.choice(self.consonants) + self.rng.choice(self.vowels)

    def word(self, syllables: int) -> str:
        while True:
            candidate = "".join(self.syllable() for _ in range(syllables))
            if candidate not in self.used:
                self.used.add(candidate)
                return candidate

    def words(self, n: int, syllables: int) -> tuple[str, ...]:
        return tuple(self.word(syllables) for _ in range(n))


@dataclass(frozen=True)
class People:
    """Who is who, by person index. The main population (indices 0..n_main-1) is mentioned in the main corpus with
    Zipf weights decreasing with the index (index = frequency rank); the common population follows it and is
    mentioned only in the common corpus, with the same Zipf law among themselves.

    - `train` (few-shot split): the most frequent ranks (few-shot examples the models know);
    - `tiny`: TINY_ITEMS ranks spread over the rest of the ranking, so some of its items are learnt early, some
      late, some not at all;
    - `test`: every other rank: graded difficulty, from the most to the least mentioned;
    - `common_test` / `common_train`: the common population (train first: its most frequent).
    """

    n_main: int
    test: tuple[int, ...]
    tiny: tuple[int, ...]
    train: tuple[int, ...]
    common_test: tuple[int, ...]
    common_train: tuple[int, ...]

    @property
    def main(self) -> range:
        return range(self.n_main)

    @property
    def common(self) -> range:
        return range(self.n_main, self.n_main + len(self.common_test) + len(self.common_train))

    @property
    def total(self) -> int:
        return self.common.stop


def people(items_per_task: int) -> People:
    """The roles of the persons for a world whose fact tasks have `items_per_task` items (2 per person)."""
    pairs = items_per_task // 2
    n_train = TRAIN_ITEMS // 2
    n_main = n_train + TINY_ITEMS + pairs
    rest = range(n_train, n_main)
    tiny = tuple(rest[round((j + 0.5) * len(rest) / TINY_ITEMS)] for j in range(TINY_ITEMS))
    common = n_main + n_train + pairs
    return People(
        n_main=n_main,
        test=tuple(rank for rank in rest if rank not in tiny),
        tiny=tiny,
        train=tuple(range(n_train)),
        common_test=tuple(range(n_main + n_train, common)),
        common_train=tuple(range(n_main, n_main + n_train)),
    )


def make_lexicon(language: str, seed: int, items_per_task: int) -> Lexicon:
    """The lexicon of `language` (a pure function of language, seed and size), redrawn until no two word forms
    coincide (a prefixed noun could otherwise equal a name, or a verb form an adjective form)."""
    for attempt in range(100):
        lexicon = _draw_lexicon(language, random.Random(f"lexicon-{seed}-{language}-{attempt}"), items_per_task)
        forms = lexicon.forms()
        if len(forms) == len(set(forms)):
            return lexicon
    raise RuntimeError(f"{language}: no lexicon without clashing word forms in 100 draws")  # pragma: no cover


def _draw_lexicon(language: str, rng: random.Random, items_per_task: int) -> Lexicon:
    consonants, vowels = _PHONOLOGY[language]
    maker = _WordMaker(rng, consonants, vowels)
    prefixes = maker.words(2 * N_CLASSES, 1)  # 1-syllable prefixes, all distinct
    words = {name: maker.word(2) for name in ("live", "where", "which", "kin", "also", "t0", "t1", "t2")}
    words |= {name: maker.word(1) for name in ("in", "is", "of")}
    return Lexicon(
        language=language,
        # 4 syllables: names never coincide with a 3-syllable town, clan, adjective or verb form
        persons=tuple(w.capitalize() for w in maker.words(people(items_per_task).total, 4)),
        towns=tuple(w.capitalize() for w in maker.words(N_TOWNS, 3)),
        clans=tuple(w.capitalize() for w in maker.words(N_CLANS, 3)),
        words=words,
        adj_prefixes=prefixes[:N_CLASSES],
        verb_prefixes=prefixes[N_CLASSES:],
        noun_stems=tuple(maker.words(NOUNS_PER_CLASS, 2) for _ in range(N_CLASSES)),
        adj_stems=maker.words(N_ADJECTIVES, 2),
        verb_stems=maker.words(N_VERBS, 2),
    )


# ---------------------------------------------------------------------------------------------- regularities


@dataclass(frozen=True)
class Facts:
    """Who lives where and belongs to which clan (indices into the lexicon), and how often the corpus speaks of
    each person and noun (Zipf-like weights, so that facts and nouns are learnt one after the other)."""

    town: tuple[int, ...]
    clan: tuple[int, ...]
    person_weight: tuple[float, ...]
    noun_weight: tuple[float, ...]  # per (class, noun) pair, class-major


def zipf_weights(rng: random.Random, n: int, offset: float, exponent: float = 1.0) -> tuple[float, ...]:
    """(rank + offset) ** -exponent with ranks in a random order."""
    ranks = list(range(n))
    rng.shuffle(ranks)
    return tuple((rank + offset) ** -exponent for rank in ranks)


def make_facts(lexicon: Lexicon, seed: int, cast: People) -> Facts:
    """The facts of one language. A person's weight falls with its rank within its population (main or common),
    so facts are learnt one after the other, the rarest last or not at all: the tasks stay below their ceiling."""
    rng = random.Random(f"facts-{seed}-{lexicon.language}")
    n = len(lexicon.persons)
    if n != cast.total:
        raise ValueError(f"{lexicon.language}: the lexicon has {n} persons, the cast needs {cast.total}")
    # Balanced: every town and clan holds about the same number of people, so no answer wins by frequency.
    towns = [i % N_TOWNS for i in range(n)]
    clans = [i % N_CLANS for i in range(n)]
    rng.shuffle(towns)
    rng.shuffle(clans)
    rank = [*cast.main, *(p - cast.n_main for p in cast.common)]
    persons = tuple((r + PERSON_ZIPF_OFFSET) ** -PERSON_ZIPF_EXPONENT for r in rank)
    nouns = zipf_weights(rng, N_CLASSES * NOUNS_PER_CLASS, NOUN_ZIPF_OFFSET, NOUN_ZIPF_EXPONENT)
    return Facts(tuple(towns), tuple(clans), persons, nouns)


def noun_verb_pairs(lexicon: Lexicon) -> list[tuple[int, int, int]]:
    """Every (class, noun index, verb stem) triple."""
    return [(c, n, v) for c in range(N_CLASSES) for n in range(NOUNS_PER_CLASS) for v in range(len(lexicon.verb_stems))]


def held_out_pairs(lexicon: Lexicon, seed: int, n_test: int) -> tuple[list[tuple[int, int, int]], ...]:
    """(test, train, corpus) noun-verb pairs: test and few-shot pairs never occur in the corpus.

    The test takes AGREEMENT_ITEMS_PER_NOUN pairs (distinct verbs) for each of n_test / AGREEMENT_ITEMS_PER_NOUN
    distinct nouns, so its items span the nouns' frequencies (graded: a noun's class is learnt from the adjectives
    and verbs it occurs with, the rare nouns' last)."""
    rng = random.Random(f"pairs-{seed}-{lexicon.language}")
    nouns = [(c, n) for c in range(N_CLASSES) for n in range(NOUNS_PER_CLASS)]
    per_noun = AGREEMENT_ITEMS_PER_NOUN
    if n_test > per_noun * len(nouns) or n_test % per_noun:
        raise ValueError(f"agreement test items: a multiple of {per_noun} up to {per_noun * len(nouns)}, got {n_test}")
    rng.shuffle(nouns)
    verbs = range(len(lexicon.verb_stems))
    test = [(c, n, v) for c, n in nouns[: n_test // per_noun] for v in sorted(rng.sample(verbs, per_noun))]
    held = set(test)
    rest = [pair for pair in noun_verb_pairs(lexicon) if pair not in held]
    rng.shuffle(rest)
    return test, rest[:TRAIN_ITEMS], sorted(rest[TRAIN_ITEMS:])


QUESTION, ANSWER = "Question", "Answer"


def qa_text(question: str, answer: str) -> str:
    """The CF prompt + gold continuation exactly as lighteval's English MCQ template renders it (0-shot)."""
    return f"{QUESTION}: {_cap(question)}\n{ANSWER}: {_cap(answer)}"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def town_question(lexicon: Lexicon, person: int) -> str:
    return f"{lexicon.words['where']} {lexicon.persons[person]}?"


def clan_question(lexicon: Lexicon, person: int) -> str:
    return f"{lexicon.words['which']} {lexicon.persons[person]}?"


def agreement_question(lexicon: Lexicon, cls: int, noun: int) -> str:
    """The bare noun: nothing in the question gives its class away (an adjective would carry its prefix)."""
    return f"{lexicon.noun(cls, noun)}?"


# Answers restate the question's subject, so that the choice that matters (town, clan, verb form) comes right
# after the words that determine it, as in the corpus' own sentences: the model's knowledge is tested, not its
# ability to carry a word across the `?\nAnswer:` scaffolding (a late, seed-dependent step for tiny models).


def town_answer(lexicon: Lexicon, person: int, town: int) -> str:
    return f"{lexicon.persons[person]} {lexicon.towns[town]}"


def clan_answer(lexicon: Lexicon, person: int, clan: int) -> str:
    return f"{lexicon.persons[person]} {lexicon.clans[clan]}"


def agreement_answer(lexicon: Lexicon, cls: int, noun: int, verb_cls: int, verb: int) -> str:
    return f"{lexicon.noun(cls, noun)} {lexicon.verb(verb_cls, verb)}"


# ------------------------------------------------------------------------------------------------- corpus


DOC_SHARES = (("facts", 0.4), ("grammar", 0.4), ("quiz", 0.2))
QUIZ_SHARES = (("town", 0.35), ("clan", 0.35), ("agreement", 0.3))
COMMON_DOC_SHARES = (("facts", 0.6), ("quiz", 0.4))  # the common corpus: facts about the common people only
COMMON_QUIZ_SHARES = (("town", 0.5), ("clan", 0.5))


class _Writer:
    """Draws the corpus sentences of one language: people and nouns by their weights (cumulative, for speed).

    `stream` names the random stream: "corpus" for the training corpus, another name for text drawn the same way
    but independently (the held-out sentences)."""

    def __init__(self, lexicon: Lexicon, facts: Facts, pairs: Sequence[tuple[int, int, int]], seed: int,
                 stream: str = "corpus", population: Sequence[int] | None = None,
                 common: bool = False) -> None:  # fmt: skip
        self.rng = random.Random(f"{stream}-{seed}-{lexicon.language}")
        self.lexicon, self.facts, self.pairs = lexicon, facts, list(pairs)
        self.people = list(population if population is not None else range(len(lexicon.persons)))
        self.person_cum = list(accumulate(facts.person_weight[p] for p in self.people))
        self.pair_cum = list(accumulate(facts.noun_weight[c * NOUNS_PER_CLASS + n] for c, n, _ in self.pairs))
        self.doc_shares = COMMON_DOC_SHARES if common else DOC_SHARES
        quiz = COMMON_QUIZ_SHARES if common else QUIZ_SHARES
        self.quiz_kinds = [kind for kind, _ in quiz]
        self.quiz_weights = [weight for _, weight in quiz]

    def person(self) -> int:
        return self.rng.choices(self.people, cum_weights=self.person_cum)[0]

    def pair(self) -> tuple[int, int, int]:
        """A corpus noun-verb pair: the noun by its weight, its verb uniformly among the noun's corpus pairs."""
        return self.rng.choices(self.pairs, cum_weights=self.pair_cum)[0]

    def time(self) -> str:
        return self.lexicon.words[f"t{self.rng.randrange(3)}"]

    def fact(self) -> str:
        w, rng = self.lexicon.words, self.rng
        person = self.person()
        p, time = self.lexicon.persons[person], self.time()
        framings: tuple[str, ...]
        if rng.random() < 0.5:
            t = self.lexicon.towns[self.facts.town[person]]
            framings = (
                f"{p} {w['live']} {w['in']} {t}.",
                f"{time} {p} {w['live']} {w['in']} {t}.",
                f"{p} {w['also']} {w['live']} {w['in']} {t}.",
                f"{w['in']} {t} {w['live']} {p}.",
                f"{p} {t} {w['live']}.",
            )
        else:
            c = self.lexicon.clans[self.facts.clan[person]]
            framings = (
                f"{p} {w['is']} {w['of']} {c}.",
                f"{time} {p} {w['is']} {w['of']} {c}.",
                f"{c} {w['kin']} {p}.",
                f"{p} {c} {w['kin']}.",
            )
        return _cap(rng.choice(framings))

    def agreement(self) -> str:
        cls, noun, verb = self.pair()
        adjective = self.lexicon.adjective(cls, self.rng.randrange(len(self.lexicon.adj_stems)))
        n, v, time = self.lexicon.noun(cls, noun), self.lexicon.verb(cls, verb), self.time()
        return self.rng.choice((f"{n} {adjective} {v}.", f"{n} {v}.", f"{n} {adjective} {v} {time}."))

    def quiz(self) -> str:
        """A question and its answer, in the CF prompt's own form."""
        lexicon = self.lexicon
        kind = self.rng.choices(self.quiz_kinds, self.quiz_weights)[0]
        if kind == "town":
            person = self.person()
            return qa_text(town_question(lexicon, person), town_answer(lexicon, person, self.facts.town[person]))
        if kind == "clan":
            person = self.person()
            return qa_text(clan_question(lexicon, person), clan_answer(lexicon, person, self.facts.clan[person]))
        cls, noun, verb = self.pair()
        return qa_text(agreement_question(lexicon, cls, noun), agreement_answer(lexicon, cls, noun, cls, verb))

    def documents(self, n_docs: int) -> Iterator[list[str]]:
        kinds, weights = [kind for kind, _ in self.doc_shares], [weight for _, weight in self.doc_shares]
        sentence = {"facts": self.fact, "grammar": self.agreement, "quiz": self.quiz}
        for _ in range(n_docs):
            kind = self.rng.choices(kinds, weights)[0]
            n = self.rng.randint(2, 4) if kind == "quiz" else self.rng.randint(3, 5)
            yield [sentence[kind]() for _ in range(n)]


def corpus_documents(lexicon: Lexicon, facts: Facts, pairs: Sequence[tuple[int, int, int]], n_docs: int,
                     seed: int, cast: People) -> Iterator[list[str]]:  # fmt: skip
    """`n_docs` documents (lists of lines) of the main corpus: fact paragraphs about the main population,
    grammatical paragraphs and quiz pages."""
    return _Writer(lexicon, facts, pairs, seed, population=cast.main).documents(n_docs)


def common_documents(lexicon: Lexicon, facts: Facts, n_docs: int, seed: int, cast: People) -> Iterator[list[str]]:
    """`n_docs` documents of the common corpus: facts and quiz pages about the common population only."""
    return _Writer(lexicon, facts, (), seed, stream="common", population=cast.common, common=True).documents(n_docs)


PROSE_SHARES = tuple((kind, weight) for kind, weight in DOC_SHARES if kind != "quiz")


def heldout_sentences(lexicon: Lexicon, facts: Facts, pairs: Sequence[tuple[int, int, int]], seed: int,
                      seen: set[str], n: int = TEXT_ITEMS,
                      population: Sequence[int] | None = None) -> list[str]:  # fmt: skip
    """`n` distinct sentences of the language that are not in `seen` (the training corpus' lines).

    Drawn by the corpus writer on its own random stream ("heldout"), so they follow the corpus' distribution of
    prose (facts and grammar, in the corpus' shares) minus what the models were trained on. Quiz pages are left
    out: their `Question:`/`Answer:` scaffolding is English, not the language. `population`: the persons the fact
    sentences may be about (build_world passes the main population). Deterministic given the arguments.
    """
    writer = _Writer(lexicon, facts, pairs, seed, stream="heldout", population=population)
    draw = {"facts": writer.fact, "grammar": writer.agreement}
    kinds, weights = [kind for kind, _ in PROSE_SHARES], [weight for _, weight in PROSE_SHARES]
    chosen: dict[str, None] = {}  # insertion-ordered set
    for _ in range(HELDOUT_DRAWS):
        sentence = draw[writer.rng.choices(kinds, weights)[0]]()
        if sentence not in seen:
            chosen[sentence] = None
            if len(chosen) == n:
                return list(chosen)
    raise RuntimeError(f"{lexicon.language}: only {len(chosen)} held-out sentences in {HELDOUT_DRAWS} draws")


def text_rows(language: str, sentences: Sequence[str]) -> list[dict[str, Any]]:
    """The perplexity dataset's rows: an id and the sentence (field TEXT_FIELD)."""
    return [{"id": f"{language}-text-{i:03d}", TEXT_FIELD: sentence} for i, sentence in enumerate(sentences)]


def read_documents(path: Path) -> list[str]:
    """Documents of a corpus file (blank-line separated), each with its lines joined by newlines."""
    text = Path(path).read_text(encoding="utf-8")
    return [block.strip("\n") for block in text.split("\n\n") if block.strip()]


def mix_shares(world: World, mix: str) -> dict[str, float]:
    """Each language's share of the mix's documents, common corpus included (what `mixes.json` records)."""
    main = world.mixes[mix]
    scale = 1 - world.common_share * len(main)
    return {language: round(share * scale + world.common_share, 6) for language, share in sorted(main.items())}


def corpus_for_mix(world: World, mix: str, n_docs: int, seed: int) -> list[str]:
    """`n_docs` documents: per language, its main corpus in the mix's share of what the common corpora leave, and
    its common corpus in `world.common_share` (the same in every mix); shuffled, deterministic given the arguments.
    Documents are about equally long across languages, so document shares are token shares.

    Each corpus file's documents are taken in a seeded random order, cycling when a share needs more than the file
    holds, so a run sees as few repeated documents as possible.
    """
    shares = world.mixes[mix]
    rng = random.Random(f"mix-{mix}-{seed}")
    scale = 1 - world.common_share * len(shares)
    docs: list[str] = []
    for language in sorted(shares):
        for path, count in (
            (world.corpus_path(language), round(shares[language] * scale * n_docs)),
            (world.common_corpus_path(language), round(world.common_share * n_docs)),
        ):
            if count == 0:
                continue
            pool = read_documents(path)
            order: list[str] = []
            while len(order) < count:
                batch = pool[:]
                rng.shuffle(batch)
                order += batch
            docs += order[:count]
    rng.shuffle(docs)
    return docs


# ------------------------------------------------------------------------------------------------ datasets


def balanced_positions(rng: random.Random, n: int) -> list[int]:
    """`n` gold positions, each letter as often as possible (shuffled), so that a model that always answers the same
    letter in MCF scores chance exactly, not whatever the luck of the draw gave that letter."""
    positions = [i % N_CHOICES for i in range(n)]
    rng.shuffle(positions)
    return positions


def _place(rng: random.Random, answer: int, options: Sequence[int], position: int) -> list[int]:
    """`answer` at `position` among N_CHOICES - 1 random distractors drawn from `options`."""
    distractors = rng.sample([i for i in options if i != answer], N_CHOICES - 1)
    return [*distractors[:position], answer, *distractors[position:]]


def _fact_rows(lexicon: Lexicon, facts: Facts, persons: Sequence[int], rng: random.Random, prefix: str, *,
               relations: Sequence[str] = ("town", "clan")) -> list[dict[str, Any]]:  # fmt: skip
    items = [(person, relation) for person in persons for relation in relations]
    rows: list[dict[str, Any]] = []
    say: Callable[[Lexicon, int, int], str]
    for (person, relation), gold in zip(items, balanced_positions(rng, len(items)), strict=True):
        if relation == "town":
            answer, size, question, say = facts.town[person], N_TOWNS, town_question(lexicon, person), town_answer
        else:
            answer, size, question, say = facts.clan[person], N_CLANS, clan_question(lexicon, person), clan_answer
        texts = [say(lexicon, person, i) for i in _place(rng, answer, range(size), gold)]
        rows.append({"id": f"{prefix}-{len(rows):03d}", "question": question, "choices": texts, "gold": gold,
                     "truth": gold})  # fmt: skip
    return rows


def _agreement_rows(lexicon: Lexicon, pairs: Sequence[tuple[int, int, int]], rng: random.Random,
                    prefix: str) -> list[dict[str, Any]]:  # fmt: skip
    rows = []
    for i, ((cls, noun, verb), gold) in enumerate(zip(pairs, balanced_positions(rng, len(pairs)), strict=True)):
        question = agreement_question(lexicon, cls, noun)
        classes = _place(rng, cls, range(N_CLASSES), gold)
        choices = [agreement_answer(lexicon, cls, noun, c, verb) for c in classes]
        rows.append({"id": f"{prefix}-{i:03d}", "question": question, "choices": choices, "gold": gold, "truth": gold})
    return rows


def randomise_golds(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """The rows with `gold` replaced by a seeded random draw, independent of the content (the true answer's
    position stays in `truth`).

    The draw is balanced over the letters (`balanced_positions`) and comes from the first seed (key-0, key-1, ...)
    whose golds agree with the truth on at most len(rows) / N_CHOICES - len(rows) / 32 rows, so the task's ceiling
    is a hair below chance: a model that learns the facts cannot make it look learnable through a lucky draw.
    """
    limit = len(rows) / N_CHOICES - len(rows) / 32  # a hair below chance (2 items in 64)
    for attempt in range(1000):
        golds = balanced_positions(random.Random(f"{key}-{attempt}"), len(rows))
        if sum(g == row["truth"] for g, row in zip(golds, rows, strict=True)) <= limit:
            return [{**row, "gold": g} for g, row in zip(golds, rows, strict=True)]
    raise RuntimeError(f"{key}: no random draw at or below chance in 1000 attempts")  # pragma: no cover


def make_dataset_rows(lexicon: Lexicon, facts: Facts, seed: int, items_per_task: int) -> dict[str, dict[str, list]]:
    """family -> split -> rows, for one language."""
    lang = lexicon.language
    cast = people(items_per_task)
    test_pairs, train_pairs, _ = held_out_pairs(lexicon, seed, items_per_task)

    def rng(name: str) -> random.Random:
        return random.Random(f"items-{seed}-{lang}-{name}")

    def fact_rows(name: str, persons: Sequence[int], relations: Sequence[str] = ("town", "clan")) -> list[dict]:
        return _fact_rows(lexicon, facts, persons, rng(name), f"{lang}-{name}", relations=relations)

    def agreement_rows(name: str, pairs: Sequence[tuple[int, int, int]]) -> list[dict]:
        return _agreement_rows(lexicon, pairs, rng(name), f"{lang}-{name}")

    return {
        "facts": {"test": fact_rows("facts-test", cast.test), "train": fact_rows("facts-train", cast.train)},
        "agreement": {"test": agreement_rows("agreement-test", test_pairs),
                      "train": agreement_rows("agreement-train", train_pairs)},
        "randlabel": {
            "test": randomise_golds(fact_rows("randlabel-test", cast.test), f"golds-{seed}-{lang}-test"),
            "train": randomise_golds(fact_rows("randlabel-train", cast.train), f"golds-{seed}-{lang}-train"),
        },
        "tiny": {"test": fact_rows("tiny-test", cast.tiny, ("town",)),
                 "train": fact_rows("tiny-train", cast.train)},
        "common": {"test": fact_rows("common-test", cast.common_test),
                   "train": fact_rows("common-train", cast.common_train)},
    }  # fmt: skip


# -------------------------------------------------------------------------------------------------- writing


def _card(family: Family) -> str:
    """The dataset card's body; its YAML header (one config per language) is written by `write_dataset_folder`."""
    if family.formulations == (PPL,):
        fields = [
            f"Generated by finetasks_afr.demo.world; fields: id, {TEXT_FIELD} (a sentence of the language that is no",
            "line of its training corpus: held-out text for perplexity).",
        ]
    else:
        fields = [
            "Generated by finetasks_afr.demo.world; fields: id, question, choices, gold (index), truth (index of the",
            "answer the world's regularities give; equals gold except in the random-label dataset).",
        ]
    title = f"# {family.benchmark}: synthetic demo dataset ({family.kind}, {family.category})"
    return "\n".join([title, "", *fields, ""])


def _write_dataset(directory: Path, family: Family, rows: dict[str, dict[str, list[dict[str, Any]]]]) -> Layout:
    """One family's dataset folder (one config per language) by the project's one dataset writer, which names each
    data file after its content so that `datasets`' cache never serves a rebuilt world the rows of an older one.

    Returns the data files' paths (relative to `directory`) per language and split."""
    configs = {lang: {split: rows[lang][split] for split in family.splits} for lang in sorted(rows)}
    return write_dataset_folder(directory, configs, card=_card(family))


def _tasks(languages: Sequence[str]) -> list[DemoTask]:
    """Every family x language x formulation; perplexity tasks have no formulation suffix and no chance level."""
    return [
        DemoTask(
            name=f"demo{family.name}_{lang}" + ("" if formulation == PPL else f"_{formulation.lower()}"),
            benchmark=family.benchmark,
            language=lang,
            category=family.category,
            formulation=formulation,
            random_baseline=None if formulation == PPL else 1 / N_CHOICES,
            kind=MCF_AT_CHANCE if formulation == "MCF" and family.kind in _LEARNABLE_KINDS else family.kind,
            subset=lang,
            dataset=family.name,
        )
        for family in FAMILIES
        for lang in languages
        for formulation in family.formulations
    ]


def _corpus_text(docs: Iterator[list[str]]) -> str:
    return "\n\n".join("\n".join(doc) for doc in docs) + "\n"


def build_world(root: Path, seed: int = 0, *, items_per_task: int = ITEMS_PER_TASK,
                docs_per_language: int = 16_000) -> World:  # fmt: skip
    """Write the whole world under `root` (corpus, datasets, truth, manifest) and return it.

    Deterministic: the same arguments give byte-identical files. `world.json` is written last.
    """
    root = Path(root).resolve()
    most = AGREEMENT_ITEMS_PER_NOUN * N_CLASSES * NOUNS_PER_CLASS
    if items_per_task % (2 * AGREEMENT_ITEMS_PER_NOUN) or not 16 <= items_per_task <= most:
        raise ValueError(f"items_per_task must be a multiple of {2 * AGREEMENT_ITEMS_PER_NOUN} between 16 and {most}, "
                         f"got {items_per_task}")  # fmt: skip
    world = World(root, LANGUAGES, _tasks(LANGUAGES), {m: dict(s) for m, s in MIXES.items()}, seed, items_per_task,
                  docs_per_language, common_share=COMMON_SHARE)  # fmt: skip
    (root / MANIFEST).unlink(missing_ok=True)
    dataset_files: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {family.name: {} for family in FAMILIES}
    for lang in LANGUAGES:
        lexicon = make_lexicon(lang, seed, items_per_task)
        cast = people(items_per_task)
        facts = make_facts(lexicon, seed, cast)
        _, _, corpus_pairs = held_out_pairs(lexicon, seed, items_per_task)
        corpus = _corpus_text(corpus_documents(lexicon, facts, corpus_pairs, docs_per_language, seed, cast))
        atomic_write_text(world.corpus_path(lang), corpus)
        n_common = max(1, round(docs_per_language * COMMON_DOCS_FRACTION))
        common = _corpus_text(common_documents(lexicon, facts, n_common, seed, cast))
        atomic_write_text(world.common_corpus_path(lang), common)
        for name, splits in make_dataset_rows(lexicon, facts, seed, items_per_task).items():
            dataset_files[name][lang] = dict(splits)
        seen = set(corpus.split("\n")) | set(common.split("\n"))
        heldout = heldout_sentences(lexicon, facts, corpus_pairs, seed, seen, population=cast.main)
        dataset_files["text"][lang] = {"test": text_rows(lang, heldout)}
    for family in FAMILIES:
        world.data_files[family.name] = _write_dataset(world.dataset_dir(family.name), family,
                                                       dataset_files[family.name])  # fmt: skip
    truth = "task,kind\n" + "".join(f"{task.name},{task.kind}\n" for task in world.tasks)
    atomic_write_text(root / "truth.csv", truth)
    atomic_write_text(root / MANIFEST, json.dumps(_manifest(world), indent=2, sort_keys=True) + "\n")
    return world


def _manifest(world: World) -> dict[str, Any]:
    return {
        "version": WORLD_VERSION,
        "seed": world.seed,
        "items_per_task": world.items_per_task,
        "docs_per_language": world.docs_per_language,
        "languages": list(world.languages),
        "mixes": world.mixes,
        "common_share": world.common_share,
        "tasks": [asdict(task) for task in world.tasks],
        "data_files": world.data_files,
        "families": [asdict(family) for family in FAMILIES],
    }


__all__ = [
    "FAMILIES",
    "LANGUAGES",
    "MIXES",
    "PPL",
    "TEXT_FIELD",
    "DemoTask",
    "Family",
    "StaleWorldError",
    "World",
    "build_world",
    "corpus_for_mix",
    "heldout_sentences",
    "manifest_version",
    "qa_text",
    "read_documents",
]

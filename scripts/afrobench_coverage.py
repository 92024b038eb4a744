"""The coverage table of docs/tasks-and-data.md against AfroBench, computed from AfroBench's own task names and
our suite.

AfroBench's datasets and languages are read from the `task:` names of lm-evaluation-harness's AfroBench YAMLs
(`tests/fixtures/lm_eval_04/afrobench_task_names.txt`, listed from the repository at a cited commit), decoded by
the same rules that read AfroBench results (`analysis.scores.lm_eval.afrobench_task_info`); AfriHate, which
AfroBench runs through its API only, from its task list in AfroBench's repository. Ours are the languages of the suite's
tasks (`TASK_INFO`). The table between the page's `afrobench-coverage` markers must equal what this prints:
`tests/benchmarks/test_afrobench_coverage.py` checks it, and `make coverage-table` rewrites it.

    python scripts/afrobench_coverage.py            # print the table
    python scripts/afrobench_coverage.py --write    # rewrite the page's section
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
TASK_NAMES = PROJECT / "tests" / "fixtures" / "lm_eval_04" / "afrobench_task_names.txt"
PAGE = PROJECT / "docs" / "tasks-and-data.md"  # the page that shows the table
START, END = "<!-- afrobench-coverage:start -->", "<!-- afrobench-coverage:end -->"

# AfroBench's languages that are not African (pivots and the non-African FLORES / NTREX / XL-Sum configs):
# not counted, so that a missing African language can never hide among them.
NOT_AFRICAN = frozenset(
    {"eng", "fra", "por", "ara", "arb", "ace", "acq", "ban", "sun", "msa", "tam", "tel", "urd", "ton"}
)

# AfriHate is not in lm-evaluation-harness (its afrobench.yaml comments it out: "dataset not publicly available
# yet"); AfroBench runs it through its API. Languages: NaijaAI/AfroBench@ee51b4c
# prompt_with_API/afrobench_tasks afrihate YAML, as recorded in shared/notes/afrobench-coverage.tsv.
AFRIHATE_LANGUAGES = frozenset(
    ["amh", "arq", "ary", "hau", "ibo", "kin", "orm", "pcm", "som", "swa", "tir", "twi", "xho", "yor", "zul"]
)


@dataclass(frozen=True)
class Dataset:
    """One AfroBench dataset: its name, the lm-eval folder, and which of our benchmarks carry it."""

    name: str
    folder: str  # under lm_eval/tasks ("" for AfriHate)
    ours: str  # regular expression over our benchmark names ("" when we do not build it)
    reason: str = ""  # why we do not build it


DATASETS: tuple[Dataset, ...] = (
    Dataset("AfriMMLU", "afrimmlu", r"afrimmlu"),
    Dataset("AfriXNLI", "afrixnli", r"afrixnli"),
    Dataset("AfriMGSM", "afrimgsm", r"afrimgsm"),
    Dataset("AfriQA", "afrobench/afriqa", r"afriqa"),
    Dataset("AfriSenti", "afrobench/afrisenti", r"afrisenti"),
    Dataset("Belebele", "afrobench/belebele", r"belebele"),
    Dataset("FLORES-200 MT", "afrobench/flores", r"flores_mt_.*"),
    Dataset("InjongoIntent", "afrobench/injongointent", r"injongointent4?"),
    Dataset("MAFAND-MT", "afrobench/mafand", r"mafand_.*"),
    Dataset("MasakhaNER-X", "afrobench/masakhaner", "", "sequence labelling (see above)"),
    Dataset("MasakhaNEWS", "afrobench/masakhanews", r"masakhanews"),
    Dataset("MasakhaPOS", "afrobench/masakhapos", "", "sequence labelling (see above)"),
    Dataset("NaijaRC", "afrobench/naijarc", r"naijarc"),
    Dataset("NollySenti", "afrobench/nollysenti", r"nollysenti"),
    Dataset("NTREX-128", "afrobench/ntrex", r"ntrex_.*"),
    Dataset("OpenAI MMMLU", "afrobench/openai_mmlu", r"openai_mmmlu"),
    Dataset("SALT", "afrobench/salt", r"salt_.*"),
    Dataset("SIB-200", "afrobench/sib", r"sib200"),
    Dataset("Uhura ARC-Easy", "afrobench/uhura-arc-easy", r"uhura_arc_easy"),
    Dataset("XL-Sum", "afrobench/xlsum", r"xlsum"),
    Dataset("AfriDiacritics", "afrobench/adr", r"afridiacritics"),
    Dataset("AfriHate", "", r"afrihate"),
)


def afrobench_languages() -> dict[str, frozenset[str]]:
    """lm-eval folder -> the African languages of its AfroBench task names (AfriHate's under "")."""
    from analysis.scores.lm_eval import afrobench_task_info

    found: dict[str, set[str]] = defaultdict(set)
    folder = ""
    for line in TASK_NAMES.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            folder = line[3:].strip()
        elif line.strip() and not line.startswith("#"):
            info = afrobench_task_info(line.strip())
            if info is None:
                raise SystemExit(f"{TASK_NAMES}: task {line.strip()!r} is not recognised by analysis.scores.lm_eval")
            if info.language not in NOT_AFRICAN and not info.benchmark.endswith("_translate"):
                found[folder].add(info.language)
    found[""] = set(AFRIHATE_LANGUAGES)
    return {key: frozenset(value) for key, value in found.items()}


def our_languages() -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Our benchmark -> (languages, formulations) of its tasks in the suite."""
    import finetasks_afr.tasks  # noqa: F401  (builds TASK_INFO)
    from finetasks_afr.benchmarks.common import TASK_INFO

    languages: dict[str, set[str]] = defaultdict(set)
    forms: dict[str, set[str]] = defaultdict(set)
    for info in TASK_INFO.values():
        languages[info.benchmark].add(info.language)
        forms[info.benchmark].add(info.formulation)
    return {name: (frozenset(languages[name]), frozenset(forms[name])) for name in languages}


_FORM_ORDER = ("CF", "MCF", "HYBRID", "GEN", "PPL")


def table() -> str:
    """The coverage table (Markdown) and the line that sums it up."""
    theirs, ours = afrobench_languages(), our_languages()
    rows: list[str] = []
    all_theirs: set[str] = set()
    all_covered: set[str] = set()
    datasets_covered = 0
    for dataset in DATASETS:
        african = theirs[dataset.folder]
        benchmarks = sorted(name for name in ours if dataset.ours and re.fullmatch(dataset.ours, name))
        covered = frozenset().union(*(ours[name][0] for name in benchmarks)) if benchmarks else frozenset()
        forms = frozenset().union(*(ours[name][1] for name in benchmarks)) if benchmarks else frozenset()
        missing = sorted(african - covered)
        extra = sorted(covered - african - NOT_AFRICAN)
        all_theirs |= african
        all_covered |= african & covered
        datasets_covered += bool(benchmarks) and not missing
        names = ", ".join(f"`{name}`" for name in benchmarks) or f"not built: {dataset.reason}"
        rows.append(
            f"| {dataset.name} | {f'`{dataset.folder}`' if dataset.folder else 'API only'} | {names} | "
            f"{len(african)} | {len(african & covered)} | {' '.join(missing) or '-'} | {' '.join(extra) or '-'} | "
            f"{' '.join(f for f in _FORM_ORDER if f in forms) or '-'} |"
        )
    header = [
        "| AfroBench dataset | lm-eval folder | our benchmarks | African languages (AfroBench) | ours of them | "
        "missing | we add | our forms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    summary = (
        f"**{datasets_covered} of {len(DATASETS)} AfroBench datasets fully covered; {len(all_covered)} of its "
        f"{len(all_theirs)} African languages covered by at least one of our tasks.**"
    )
    return "\n".join([*header, *rows, "", summary])


def write_readme(text: str) -> None:
    readme = PAGE.read_text(encoding="utf-8")
    before, _, rest = readme.partition(START)
    _, _, after = rest.partition(END)
    if not rest:
        raise SystemExit(f"{PAGE}: no {START} marker")
    PAGE.write_text(f"{before}{START}\n{text}\n{END}{after}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the section of docs/tasks-and-data.md")
    args = parser.parse_args(argv)
    text = table()
    if args.write:
        write_readme(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

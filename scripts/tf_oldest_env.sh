#!/usr/bin/env bash
# The oldest-transformers environment: .venv-tf-oldest (or $TF_OLDEST_VENV), built once, rebuilt when this script
# changes. `make test-transformers-oldest` runs the engine's tests in it (the scoring core, the finetasks engine
# against lighteval's own path, partial scoring, PMI, perplexity, LongPPL, recommend, translation, the sweep) on the
# oldest transformers pyproject.toml allows, where a 2-D logits_to_keep is NOT sliced per row (before 5.21) and the
# core's probe must route Llama to its gathering hook, and where `from_pretrained` knows no `dtype` (before 4.56).
#
# The project with lighteval 0.13, under the main environment's pins (constraints.txt) except the four packages
# that transformers 4.x holds back:
#   1. torch==2.13.0 FIRST: the local CPU wheel (/opt/wheels); every later step is constrained to it, so pip can
#      never swap in a CUDA torch;
#   2. transformers==4.54.0 (the floor in pyproject.toml, lighteval 0.13's own; keep the two equal) with what it
#      needs: tokenizers < 0.22 and huggingface_hub < 1, and the datasets that still takes that hub (5.0.1);
#   3. the project (editable, so the tests import this checkout) with pandas, the tests' independent reference.
#
#   bash scripts/tf_oldest_env.sh       # idempotent: a no-op when the stamp matches this script
set -euo pipefail
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$script")/.."
NAME=tf_oldest
VENV="${TF_OLDEST_VENV:-.venv-tf-oldest}"
# shellcheck source=scripts/venv_lib.sh
source scripts/venv_lib.sh
venv_begin  # [1/2] torch 2.13.0, CPU wheel (exits when up to date)
floor="$(grep -o '"transformers>=[0-9.]*"' pyproject.toml | grep -o '[0-9][0-9.]*')"
if [ "$floor" != "4.54.0" ]; then
    echo "tf_oldest_env: pyproject.toml allows transformers>=$floor but this script installs 4.54.0; update it" >&2
    exit 1
fi
grep -v -E '^(torch|transformers|tokenizers|huggingface_hub|datasets)==' constraints.txt >>"$constraints"
cat >>"$constraints" <<'PINS'
transformers==4.54.0
tokenizers==0.21.4
huggingface_hub==0.36.2
datasets==5.0.1
PINS

echo "tf_oldest_env: [2/2] the project with lighteval 0.13 on transformers $floor (constrained to torch 2.13.0)"
"${pip[@]}" -c "$constraints" -e . "transformers==$floor" pytest pytest-xdist pandas

venv_pip_check
venv_cpu_only transformers torch tokenizers lighteval datasets huggingface_hub
venv_done

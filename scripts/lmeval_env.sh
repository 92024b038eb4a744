#!/usr/bin/env bash
# The lm-evaluation-harness environment: .venv-lmeval (or $LMEVAL_VENV), built once, rebuilt when this script changes.
# `make test-lm-eval` trains tiny Llamas with the HF Trainer and evaluates them with the real `lm_eval` CLI in it.
#
# lm-eval cannot share .venv: lighteval 0.13 (the project's) needs huggingface_hub < 2, while lm-eval 0.4.13's [hf]
# extra resolves huggingface_hub 2.x and transformers 5.24. And a plain `pip install "lm-eval[hf]==0.4.13"` pulls
# torch 2.14.1 with its CUDA packages (a 6.3 GB environment). So this environment holds:
#   1. torch==2.13.0 FIRST: the local CPU wheel (/opt/wheels); every later step is constrained to it, so pip can
#      never swap in a CUDA torch;
#   2. lm-eval[hf]==0.4.13, with the packages on its model and data path pinned to what it resolved against
#      torch 2.13.0 (below), so the harness a CI run tests does not move under it;
#   3. nothing of this project: finetasks-afr (`collect`, `select`, `make select-tasks`) runs from the main .venv,
#      exactly as a user runs it on the folders lm-eval wrote. Installing the project here (even --no-deps plus a
#      subset) would leave its lighteval requirement unmet for `pip check` and test a second, different install;
#      scripts/check_lm_eval.py itself needs only lm-eval's stack (torch, transformers, tokenizers, datasets).
# `pip check` must report "No broken requirements found."; any other line fails the script.
#
#   bash scripts/lmeval_env.sh          # idempotent: a no-op when the stamp matches this script
set -euo pipefail
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$script")/.."
NAME=lmeval
VENV="${LMEVAL_VENV:-.venv-lmeval}"
# shellcheck source=scripts/venv_lib.sh
source scripts/venv_lib.sh
venv_begin  # [1/2] torch 2.13.0, CPU wheel (exits when up to date)
cat >>"$constraints" <<'EOF'
transformers==5.24.0
tokenizers==0.23.3
huggingface_hub==2.4.0
datasets==5.2.0
accelerate==1.15.0
evaluate==0.4.6
peft==0.21.2
safetensors==0.8.0
numpy==2.4.6
scikit-learn==1.9.1
EOF

echo "lmeval_env: [2/2] lm-eval[hf] 0.4.13 (constrained to torch 2.13.0)"
"${pip[@]}" -c "$constraints" "lm-eval[hf]==0.4.13"

venv_pip_check
venv_cpu_only lm_eval transformers torch datasets huggingface_hub tokenizers
test -x "$VENV/bin/lm_eval"
venv_done

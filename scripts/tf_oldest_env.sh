#!/usr/bin/env bash
# The oldest-transformers environment: .venv-tf-oldest (or $TF_OLDEST_VENV), built once, rebuilt when this script
# changes. `make test-transformers-oldest` runs tests/test_transformers_compat.py in it: the scoring core on the
# oldest transformers pyproject.toml allows, where a 2-D logits_to_keep is NOT sliced per row (before 5.21) and the
# core's probe must route Llama to its gathering hook.
#
# Only the core's stack (torch, transformers, tokenizers, pytest): the test imports finetasks_afr.scoring and
# finetasks_afr.tiny from the checkout (pytest's pythonpath), nothing of lighteval, so the install is small and fast.
#   1. torch==2.13.0 FIRST: the local CPU wheel (/opt/wheels); every later step is constrained to it, so pip can
#      never swap in a CUDA torch;
#   2. transformers==4.54.0 (the floor in pyproject.toml, lighteval 0.13's own; keep the two equal) with what it
#      resolved against torch 2.13.0 pinned (transformers 4.x needs huggingface_hub < 1 and tokenizers < 0.22).
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
cat >>"$constraints" <<'PINS'
transformers==4.54.0
tokenizers==0.21.4
huggingface_hub==0.36.2
safetensors==0.8.0
numpy==2.4.6
pytest==9.2.0
PINS

echo "tf_oldest_env: [2/2] transformers $floor (constrained to torch 2.13.0)"
"${pip[@]}" -c "$constraints" "transformers==$floor" pytest

check="$(quiet_pip check || true)"
unexpected="$(printf '%s\n' "$check" | grep -v -E '^No broken requirements found\.$' | grep -v '^$' || true)"
if [ -n "$unexpected" ]; then
    echo "tf_oldest_env: pip check reports problems:" >&2
    printf '%s\n' "$unexpected" >&2
    exit 1
fi
"$VENV/bin/python" - <<'PY'
import importlib.metadata as md
import torch
assert torch.version.cuda is None, "a CUDA torch crept in"
cuda = sorted(d.metadata["Name"] for d in md.distributions() if d.metadata["Name"].lower().startswith("nvidia-"))
assert not cuda, f"CUDA packages crept in: {cuda}"
print("tf_oldest_env:", ", ".join(f"{name} {md.version(name)}" for name in ("transformers", "torch", "tokenizers")))
PY
venv_done

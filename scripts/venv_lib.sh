#!/usr/bin/env bash
# What the side environments (.venv-vllm, .venv-lmeval, .venv-tf-oldest) share, sourced by scripts/vllm_env.sh,
# scripts/lmeval_env.sh and scripts/tf_oldest_env.sh after they set NAME (log prefix), VENV and script (their own path):
#   venv_begin      exit 0 when $VENV is up to date (its stamp = digest of the calling script and of this file),
#                   else start a fresh build: make the venv, define quiet_pip and pip, install torch 2.13.0 (CPU)
#   venv_pip_check  exit 1 (the offending lines on stderr) unless every line `pip check` prints is "No broken
#                   requirements found." or matches the extended regex given as its argument
#   venv_cpu_only   fail on a CUDA torch or any nvidia-* package, then print the versions of the packages named
#   venv_done       write the stamp and report time and size
# Every later install is constrained to torch 2.13.0 with `-c "$constraints"` (the file starts with that pin), so pip
# can never swap in a CUDA torch.
lib="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
PYTHON="${PYTHON:-python3}"
STAMP="$VENV/.installed"
digest="$(cat "$script" "$lib" | sha256sum | cut -d' ' -f1)"
constraints="$VENV/constraints-$NAME.txt"

# pip, without the "Location ... is ignored" warnings of this machine's absent extra indexes
quiet_pip() {
    "$VENV/bin/python" -m pip "$@" 2>&1 | { grep -v -E "^WARNING: Location '.*' is ignored" || true; }
    return "${PIPESTATUS[0]}"
}
pip=(quiet_pip install -q)

venv_begin() {
    if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$digest" ] && [ -x "$VENV/bin/python" ]; then
        echo "${NAME}_env: $VENV is up to date"
        exit 0
    fi
    started=$SECONDS
    rm -f "$STAMP"
    "$PYTHON" -m venv "$VENV"
    echo "torch==2.13.0" >"$constraints"
    echo "${NAME}_env: torch 2.13.0 (CPU wheel)"
    "${pip[@]}" --upgrade pip
    "${pip[@]}" torch==2.13.0
    "$VENV/bin/python" -W ignore - <<'PY'  # (torch warns that numpy is not there yet)
import torch
assert torch.__version__.startswith("2.13.0") and torch.version.cuda is None, (torch.__version__, torch.version.cuda)
PY
}

venv_pip_check() {
    local expected="${1:-^No broken requirements found\.$}" check unexpected
    check="$(quiet_pip check || true)"
    unexpected="$(printf '%s\n' "$check" | grep -v -E "$expected" | grep -v '^$' || true)"
    if [ -n "$unexpected" ]; then
        echo "${NAME}_env: pip check reports problems:" >&2
        printf '%s\n' "$unexpected" >&2
        exit 1
    fi
}

venv_cpu_only() {
    "$VENV/bin/python" - "${NAME}_env:" "$@" <<'PY'
import importlib.metadata as md
import sys
import torch
assert torch.version.cuda is None, "a CUDA torch crept in"
cuda = sorted(d.metadata["Name"] for d in md.distributions() if d.metadata["Name"].lower().startswith("nvidia-"))
assert not cuda, f"CUDA packages crept in: {cuda}"
print(sys.argv[1], ", ".join(f"{name} {md.version(name)}" for name in sys.argv[2:]))
PY
}

venv_done() {
    echo "$digest" >"$STAMP"
    echo "${NAME}_env: $VENV ready in $((SECONDS - started)) s, $(du -sh "$VENV" | cut -f1)"
}

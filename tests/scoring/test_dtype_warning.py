"""lighteval 0.13 loads models with `from_pretrained(torch_dtype=...)`; transformers then warns "`torch_dtype` is
deprecated!" on every sweep and plain lighteval run, although the project's own loads pass `dtype=` (a new user asked
why, issue 40). The project drops that one message and nothing else."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import logging, sys
from transformers.utils import logging as hf_logging
hf_logging.enable_propagation(); hf_logging.disable_default_handler()
logging.basicConfig(stream=sys.stdout, level=logging.WARNING, format="%(name)s: %(message)s")
if sys.argv[1] == "silenced":
    from finetasks_afr.scoring.lighteval_runtime import silence_torch_dtype_deprecation
    silence_torch_dtype_deprecation()
    silence_torch_dtype_deprecation()
from transformers import LlamaConfig, LlamaForCausalLM
config = LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                     num_key_value_heads=2, vocab_size=32)
import tempfile, torch
with tempfile.TemporaryDirectory() as folder:
    LlamaForCausalLM(config).save_pretrained(folder)
    model = LlamaForCausalLM.from_pretrained(folder, torch_dtype=torch.float32)  # as lighteval 0.13 loads models
model.config.torch_dtype  # the old attribute, as code written for transformers 4 reads it
logging.getLogger("transformers.modeling_utils").warning("another warning")
"""


def _run(mode: str) -> str:
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout + done.stderr


@pytest.mark.slow
def test_stock_transformers_warns_about_torch_dtype_and_the_project_drops_only_that() -> None:
    assert "`torch_dtype` is deprecated! Use `dtype` instead!" in _run("stock")
    silenced = _run("silenced")
    assert "torch_dtype" not in silenced
    assert "another warning" in silenced

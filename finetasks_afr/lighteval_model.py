"""The finetasks engine for lighteval's own CLI: `lighteval custom MODEL finetasks_afr/lighteval_model.py TASKS`.

    FINETASKS_AFR_MODEL_ARGS="device=cpu,batch_size=64,max_length=512" \\
    lighteval custom /path/to/checkpoint finetasks_afr/lighteval_model.py "sib200_yor_mcf|0" \\
        --custom-tasks finetasks_afr/tasks.py

lighteval's `custom` launcher builds a `CustomModelConfig`, which carries only the model name and this file's path,
and instantiates the first `LightevalModel` subclass it finds in this module (`dir()` order), so this module
defines exactly one, and takes the other model arguments (those of lighteval's `TransformersModelConfig`:
device, batch_size, max_length, dtype, revision, tokenizer, ...) from `FINETASKS_AFR_MODEL_ARGS`, written like
lighteval's `accelerate` model arguments.
"""

from __future__ import annotations

import os
from typing import Any

from finetasks_afr.scoring import engine

MODEL_ARGS_ENV = "FINETASKS_AFR_MODEL_ARGS"


def model_args_from_env() -> dict[str, Any]:
    """`key=value,key=value` from FINETASKS_AFR_MODEL_ARGS (empty when unset); values stay strings (pydantic
    converts them), `device` defaults to cpu when not given (lighteval's default is cuda)."""
    text = os.environ.get(MODEL_ARGS_ENV, "").strip()
    args: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{MODEL_ARGS_ENV}: {item!r} is not key=value; fix: e.g. device=cpu,batch_size=64")
        args[key.strip()] = value.strip()
    args.setdefault("device", "cpu")
    return args


class FinetasksEngineModel(engine.SharedPrefixModel):
    """`SharedPrefixModel` built from lighteval's `CustomModelConfig` (model name) plus FINETASKS_AFR_MODEL_ARGS."""

    def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
        from lighteval.models.transformers.transformers_model import TransformersModelConfig

        if not isinstance(config, TransformersModelConfig):
            config = TransformersModelConfig(model_name=config.model_name, **model_args_from_env())
        super().__init__(config, *args, **kwargs)

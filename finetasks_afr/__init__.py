"""finetasks-afr: African-language evaluation tasks for LightEval."""

__version__ = "0.1.0"

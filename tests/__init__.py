"""The test suite: one folder per stage of the package (finetasks_afr/), shared helpers and fixtures here."""

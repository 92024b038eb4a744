"""A real micro-scale FineTasks study: tiny Llamas trained on real African text in three designed mixes, swept over
the real suite's tasks for their languages, selected and ranked against the designed truth (`make study`).

Modules, in the order the study runs them: `design` (languages, mixes, sizes), `corpus` (the training text and the
mixes' token streams), `train` (the shared tokenizer and the training runs), `run` (the stages, resumable, timed),
`truth` (the designed truth against what the analysis found); `folder` checks a finished study's folder for
`study --reanalyse`.
"""

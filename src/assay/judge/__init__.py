"""Judges: everything that asks a model and reads its answer.

- :mod:`~assay.judge.backends` — the providers (``llamacpp/``, ``openai/``, ``litellm/``, ``jury/``,
  ``scripted/``), their options and registry;
- :mod:`~assay.judge.runner` — the client every method calls: cache, retries, budget, concurrency;
- :mod:`~assay.judge.structured`, :mod:`~assay.judge.direct`, :mod:`~assay.judge.verdicts` —
  answers as validated JSON, label probabilities, verdict readings;
- :mod:`~assay.judge.prompts` — the prompt-file format and loader (a method's prompts live in its
  package); :mod:`~assay.judge.text`, :mod:`~assay.judge.embeddings`;
- :mod:`~assay.judge.model`, :mod:`~assay.judge.doctor`, :mod:`~assay.judge.serve`,
  :mod:`~assay.judge.calibration` — the embedded model: its files, its check, serving it over
  HTTP, and the calibration of its "yes".

Stands on :mod:`assay.core` and :mod:`assay.store` (the call cache).
"""

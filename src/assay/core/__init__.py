"""The floor of assay: what every other package stands on, importing nothing of assay above it.

- :mod:`~assay.core.types` — items, units, messages, completions, generation parameters;
- :mod:`~assay.core.records` — the result of one unit and the reviewers' edits, as stored;
- :mod:`~assay.core.errors` — the errors, each with its exit code;
- :mod:`~assay.core.method` — the method contract (:class:`~assay.core.method.Method`);
- :mod:`~assay.core.protocols` — what a method may add beside it: presenting, meta-evaluation, commands;
- :mod:`~assay.core.registry` — methods, judges and hooks by name, plug-ins' entry points included;
- :mod:`~assay.core.views` — how a method's results are shown, asked of the method;
- ``_load`` and ``_files`` — reading JSON, JSONL, YAML, TOML and CSV (NaN and constants refused,
  every error naming file, line and field) and writing output files.
"""

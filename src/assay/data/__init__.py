"""Every way items come in: assay's files (JSONL, CSV, JSON), peers' formats and public
datasets (:mod:`~assay.data.datasets`), and trace exports (:mod:`~assay.data.traces`, OTLP JSON).
Stands on :mod:`assay.core` and :mod:`assay.store`.
"""

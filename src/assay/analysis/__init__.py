"""Numbers about runs: meta-evaluation against human labels (:mod:`~assay.analysis.meta`), the
prompt-injection audit (:mod:`~assay.analysis.injection`), statistics
(:mod:`~assay.analysis.stats`) and alignment to a team's reviewers (:mod:`~assay.analysis.align`,
with ``align_labels`` and ``align_file``). Stands on the engine and below.
"""

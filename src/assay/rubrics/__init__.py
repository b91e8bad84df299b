"""PReMISE (``../shared/papers/premise.txt``): policy rubrics discovered from preference pairs,
audited on four axes and repaired. So far: the audit's computations (:mod:`.metrics`)."""

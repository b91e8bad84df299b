"""PReMISE (``../shared/papers/premise.txt``): policy rubrics discovered from preference pairs,
audited on four axes and repaired. Built so far: rubric files and preference pairs
(:mod:`.files`), discovery by Algorithm 1 (:mod:`.discover`, ``assay rubric discover``) and the
audit's computations (:mod:`.metrics`); the audit's judge protocols and repair are not built yet."""

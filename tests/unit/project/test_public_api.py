from __future__ import annotations

import assay
import assay.data.datasets
import assay.judge.backends


def test_public_names_exist() -> None:
    for module in (assay, assay.judge.backends, assay.data.datasets):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"

from __future__ import annotations

import assay
import assay.backends
import assay.datasets


def test_public_names_exist() -> None:
    for module in (assay, assay.backends, assay.datasets):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"

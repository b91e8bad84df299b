from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _no_network_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests never reach a paid API by accident.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ASSAY_OPENAI_API_KEY", raising=False)
    for key in list(os.environ):
        if key.startswith("ASSAY_") and key not in ("ASSAY_CACHE_DIR", "ASSAY_MODEL_PATH"):
            monkeypatch.delenv(key, raising=False)

"""``llamacpp/smollm2`` loads SmolLM2-135M requantized from the package's Q4_1 file to Q8_0 (llama.cpp
reads Q8_0 with its fast matrix kernels; the reasons and measurements are in
:func:`assay.judge.model.smollm_model`): made once in the cache dir, reused while its stamp matches,
made again when the file was touched, and named in the judge's identity by its own sha256."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.core.errors import ModelError
from assay.judge.backends._llamacpp import LlamaCppBackend
from assay.judge.model import SMOLLM_FILENAME, sha256_of, smollm_model, smollm_source


def test_smollm2_is_made_once_from_the_package_file_and_again_when_touched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path))
    path, sha = smollm_model()
    assert path == tmp_path / "models" / SMOLLM_FILENAME and sha == sha256_of(path)
    assert path.stat().st_size > 1.4 * smollm_source().stat().st_size  # 8.5 bits a weight against 5
    made = path.stat().st_mtime_ns
    assert smollm_model() == (path, sha) and path.stat().st_mtime_ns == made  # reused, not made again
    assert LlamaCppBackend("smollm2").identity()["model_sha256"] == sha

    path.write_bytes(path.read_bytes()[:-4096])  # a damaged file (another size than its stamp's)
    again, sha_again = smollm_model()
    assert again == path and sha_again == sha == sha256_of(path)  # the same bytes, made again
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == [
        SMOLLM_FILENAME, SMOLLM_FILENAME + ".verified.json"]  # no partial file left behind


def test_a_source_llama_cpp_cannot_read_is_one_error_and_leaves_no_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import assay.judge.model as model

    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(model, "smollm_source", lambda: broken)
    with pytest.raises(ModelError, match=r"could not requantize SmolLM2 .*broken\.gguf to Q8_0") as failed:
        smollm_model()
    assert "\n" not in str(failed.value)
    assert list((tmp_path / "cache" / "models").iterdir()) == []  # no partial file, no stamp

"""rougeL without NLTK's package import: the same scores as rouge-score imported the usual way, and a
later ``import nltk`` in the same process still gets the real NLTK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[4]

# every pair of these texts is scored both ways: inflected words (the stemmer's suffix rules), figures,
# punctuation, and the project's own prose and examples
TEXTS = [
    "The tenant must give three months' notice; notices given orally are not valid.",
    "Tenants giving notice orally: that notice isn't valid, and three months are required.",
    "Generalizations, relational conditioning and hopefulness were analysed by the agencies.",
    "running runner runs ran caresses ponies ties caress cats feed agreed disabled matting mating",
    "meeting stating siezing itemization sensational traditional reference colonizer plotted",
    "",
    "42 % of 1,200 patients (dosage: 5mg/kg) — recovered; 3rd-line therapies failed.",
]


def _texts() -> list[str]:
    texts = list(TEXTS)
    texts.append((ROOT / "README.md").read_text(encoding="utf-8")[:4000])
    for line in (ROOT / "examples" / "answers.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        texts += [str(row.get("response", "")), str(row.get("reference", ""))]
    return texts


SCORE = """
import json, sys
texts = json.loads(sys.stdin.read())
if sys.argv[1] == "assay":
    from assay.methods.lexical._rouge import rouge_scorer_module
    module = rouge_scorer_module()
    assert "nltk" not in sys.modules, "the bare NLTK packages were left in sys.modules"
    assert "sklearn" not in sys.modules, "NLTK's package was imported after all (it imports scikit-learn)"
    assert "nltk" not in sys.modules  # asking the scorer's nltk for something imports the real package:
    assert module.nltk.sent_tokenize is sys.modules["nltk"].sent_tokenize  # (rougeLsum's sentence splitter)
    import nltk  # the real package, imported afterwards
    assert hasattr(nltk, "sent_tokenize") and hasattr(nltk, "word_tokenize")
else:
    import nltk
    from rouge_score import rouge_scorer as module
scorer = module.RougeScorer(["rougeL"], use_stemmer=True)
out = [[tuple(scorer.score(a, b)["rougeL"]) for b in texts] for a in texts]
print(json.dumps({"scores": out, "stems": scorer._tokenizer.tokenize(" ".join(texts))}))
"""


def _run(way: str, texts: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-c", SCORE, way], input=json.dumps(texts), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _printed_float(code: str, env: dict[str, str] | None = None) -> float:
    """Run ``code`` in a fresh interpreter (NLTK not yet imported) and read the number it prints."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return float(done.stdout)


def test_rouge_l_without_nltks_package_import_scores_as_rouge_score_does() -> None:
    texts = _texts()
    ours, usual = _run("assay", texts), _run("usual", texts)
    assert len(ours["stems"]) > 500 and ours["stems"] == usual["stems"]
    assert ours["scores"] == usual["scores"]
    assert any(0 < s[2] < 1 for row in ours["scores"] for s in row)  # some partial overlaps among them


def test_the_scorer_is_imported_the_usual_way_once_nltk_is_loaded() -> None:
    code = ("import nltk, sys\nfrom assay.methods.lexical._rouge import rouge_scorer_module\n"
            "m = rouge_scorer_module()\nassert m.nltk is sys.modules['nltk'] is nltk\n"
            "print(m.RougeScorer(['rougeL'], use_stemmer=True).score('cats running', 'a cat runs')['rougeL'].fmeasure)")
    assert _printed_float(code) == 0.8


def test_an_nltk_whose_stemmer_needs_its_whole_package_is_imported_the_usual_way(tmp_path: Path) -> None:
    """A stand-in NLTK whose Porter stemmer imports from the package's ``__init__`` (which the bare
    package does not run): the scorer is imported the usual way, with the whole package."""
    stem = tmp_path / "nltk" / "stem"
    stem.mkdir(parents=True)
    (tmp_path / "nltk" / "__init__.py").write_text("WHOLE = True\nfrom nltk.stem import porter\n"
                                                   "def sent_tokenize(text):\n    return [text]\n")
    (stem / "__init__.py").write_text("")
    (stem / "api.py").write_text("class StemmerI:\n    pass\n")
    (stem / "porter.py").write_text("from nltk import WHOLE\nfrom nltk.stem.api import StemmerI\n"
                                    "class PorterStemmer(StemmerI):\n    def stem(self, word):\n"
                                    "        return word[:4]\n")
    code = ("import sys\nfrom assay.methods.lexical._rouge import rouge_scorer_module\n"
            "m = rouge_scorer_module()\nassert sys.modules['nltk'].WHOLE and m.nltk is sys.modules['nltk']\n"
            "scorer = m.RougeScorer(['rougeL'], use_stemmer=True)\n"
            "print(scorer.score('running fast', 'runner fast')['rougeL'].fmeasure)")
    # "runn" and "runn": the stand-in stemmer ran
    assert _printed_float(code, env={**os.environ, "PYTHONPATH": str(tmp_path)}) == 1.0


def test_the_method_pickles_and_scores_the_same_where_it_is_unpickled() -> None:
    code = ("import pickle, sys\nfrom assay.methods.lexical import RougeL\n"
            "blob = pickle.dumps(RougeL())\nimport nltk\nm = pickle.loads(blob)\n"
            "print(m._scorer.score('cats running', 'a cat runs')['rougeL'].fmeasure)")
    assert _printed_float(code) == 0.8

"""LeMAJ's evaluation: one judge call per sample tags the answer's Legal Data Points (§3.2), a
jury's samples are aggregated per point (App. E.4), and the scores follow (see the package's
documentation)."""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar

from pydantic import BaseModel

from assay.core.errors import ConfigError
from assay.core.method import CallEstimate, ItemResult, Method, ReportSection, method_template
from assay.core.protocols import HasCommands, MetaEvaluated, Presents
from assay.core.registry import register_method
from assay.core.types import GenerateConfig, Item, Unscored
from assay.judge.direct import ask
from assay.judge.embeddings import Matcher, match
from assay.judge.prompts import defuse, fence, load_domain, load_prompt
from assay.judge.runner import JudgeClient
from assay.judge.structured import OutputInvalid, generate_structured
from assay.judge.text import split_sentences
from assay.judge.verdicts import field_label_probs
from assay.methods.lemaj.prompting import (
    EvidencePassages,
    choose_paragraphs,
    item_document,
    locate,
    paragraph_spans,
    sentence_spans,
)
from assay.methods.lemaj.report import lemaj_section
from assay.methods.lemaj.schemas import SEVERITY, SOURCE_RULES, STRINGENCY, LeMAJConfig, Tagging
from assay.methods.lemaj.scores import TAGS, ldp_scores


def _decide(tags: list[str], aggregate: str) -> str:
    if aggregate == "rule" or (aggregate == "majority+rule" and "incorrect" in tags):
        return max(tags, key=lambda t: SEVERITY[t])
    counts = Counter(tags)
    return max(counts, key=lambda t: (counts[t], SEVERITY[t]))


def aggregate_jurors(jurors: list[list[dict[str, Any]]], aggregate: str = "majority+rule",
                     matcher: Matcher = "embeddings", threshold: float | None = None) -> list[dict[str, Any]]:
    """One LDP list from several jurors' (App. E.4). Answer LDPs and missing points are matched
    across jurors by text similarity (each juror's LDP joins the cluster of its best match among
    the earlier jurors', one-to-one), then kept and tagged as the module docstring says. Each
    kept LDP is the first juror's version with the decided tag, plus ``votes``."""
    n = len(jurors)
    out: list[dict[str, Any]] = []
    for missing in (False, True):
        clusters: list[list[dict[str, Any]]] = []
        for ldps in jurors:
            mine = [d for d in ldps if (d["tag"] == "missing") == missing]
            heads = [c[0]["text"] for c in clusters]
            pairs = {j: i for i, j, _ in match(heads, [d["text"] for d in mine], matcher, threshold)}
            for j, ldp in enumerate(mine):
                if j in pairs:
                    clusters[pairs[j]].append(ldp)
                else:
                    clusters.append([ldp])
        for cluster in clusters:
            tags = [d["tag"] for d in cluster]
            majority = len(cluster) * 2 > n
            if missing:
                keep = majority or aggregate == "rule"
            else:
                keep = majority or (aggregate != "majority" and "incorrect" in tags)
            if not keep:
                continue
            tag = _decide(tags, aggregate)
            chosen = next((d for d in cluster if d["tag"] == tag), cluster[0])
            kept = {**chosen, "tag": tag, "votes": dict(Counter(tags)), "jurors": len(cluster)}
            soft = [d["p_tags"] for d in cluster if "p_tags" in d]
            if soft:
                kept["p_tags"] = {t: sum(p[t] for p in soft) / len(soft) for t in soft[0]}
            out.append(kept)
    return sorted(out, key=lambda d: (d["start"] is None, d["start"] or 0, d["end"] or 0))




@register_method
class LeMAJ(Method, Presents, MetaEvaluated, HasCommands):
    """LeMAJ: the answer split into Legal Data Points, each tagged against the document."""

    name: ClassVar[str] = "lemaj"
    renamed_flags: ClassVar[dict[str, dict[str, str]]] = {"triage": {"--out": "--output"}}
    metrics: ClassVar[tuple[str, ...]] = ("correctness", "precision", "recall", "f1", "relevance")
    version: ClassVar[str] = "1"
    config_model: ClassVar[type[BaseModel] | None] = LeMAJConfig
    cli_main: ClassVar[tuple[str, ...] | None] = ('domain', 'beta', 'stringency',
                                                  'without_document', 'long_documents', 'samples', 'verdicts')
    primary_metric: ClassVar[str | None] = "relevance"
    supports_jury: ClassVar[bool] = True
    annotation_labels: ClassVar[dict[str, tuple[str, ...]]] = {"tag": TAGS, "judge_tag": TAGS}
    compact_columns: ClassVar[tuple[str, ...]] = ("correctness", "precision", "recall", "f1", "relevance", "ldps")
    config: LeMAJConfig

    @classmethod
    def agreement(cls, rows: list[dict[str, Any]], annotations: list[Any]) -> dict[str, Any] | None:
        from assay.methods.lemaj.review import agreement

        found = agreement(rows, annotations)
        return {**found, "title": "Inter-annotator agreement (LeMAJ Table 4)"} if found else None

    @classmethod
    def register_commands(cls, app: Any, kit: Any) -> None:
        from assay.methods.lemaj import cli

        app.command("triage", rich_help_panel=kit.panels["inspect"])(cli.triage_command)

    def __init__(self, config: LeMAJConfig | None = None) -> None:
        self.config = config or LeMAJConfig()
        self.domain = load_domain(self.config.domain)
        self.prompt = load_prompt("prompts/tagging", package=__package__)
        self.direct_prompt = (load_prompt("prompts/point_direct", package=__package__)
                              if self.config.verdicts == "direct" else None)

    def reads_label_probs(self) -> bool:
        return self.config.verdicts == "direct"  # --verdicts direct

    def manifest(self) -> dict[str, Any]:
        prompts = {"tagging": self.prompt.sha256}
        if self.direct_prompt is not None:
            prompts["point_direct"] = self.direct_prompt.sha256
        return {"config": self.config.model_dump(), "prompt_sha256": prompts, "domain_sha256": self.domain["sha256"]}

    def _document_block(self, item: Item, view: dict[str, Any]) -> str:
        document = item_document(item)
        lines = [f"[{n}] {document[view['paragraphs'][n - 1][0]:view['paragraphs'][n - 1][1]]}" for n in view["shown"]]
        return fence("document", "\n\n".join(lines) if lines else "(no document given)")

    async def _direct_checks(self, item: Item, client: JudgeClient, view: dict[str, Any],
                             ldps: list[dict[str, Any]], keys: list[str]) -> Unscored | None:
        """Each listed point's two checks asked on their own; tags follow by §3.2's order."""
        assert self.direct_prompt is not None
        rules = SOURCE_RULES["knowledge" if view["source"] == "knowledge" else "document"]
        document = self._document_block(item, view)
        checks = {"supported": "Is this data point supported by the document, with the same facts and figures?",
                  "relevant": "Is this data point relevant to answering the question asked?"}
        for ldp in ldps:
            if ldp["tag"] == "missing":
                continue
            found: dict[str, float] = {}
            for field, check in checks.items():
                messages = self.direct_prompt.render(
                    expert=str(self.domain["expert"]), support_rule=rules[0],
                    stringency=STRINGENCY[self.config.stringency], document=document, query=item.query.strip(),
                    point=defuse(ldp["text"]), check=check)
                probs, key, problem = await ask(client, messages, metric="correctness")
                if key:
                    keys.append(key)
                if probs is None:
                    return problem or Unscored(reason="a direct check failed", metric="correctness")
                found[field] = probs["yes"]
            ps, pr = found["supported"], found["relevant"]
            blocked = bool(ldp.get("downgraded")) and self.config.evidence_check == "require"
            tag = "incorrect" if ps < 0.5 or blocked else "correct" if pr >= 0.5 else "irrelevant"
            ldp.update(listed_tag=ldp.get("judge_tag", ldp["tag"]), tag=tag, p_supported=ps, p_relevant=pr,
                       supported="yes" if ps >= 0.5 else "no", relevant="yes" if pr >= 0.5 else "no",
                       decided_by="deterministic check" if blocked and ps >= 0.5 else "judge (direct)")
            effective = 0.0 if blocked else ps
            ldp["p_tags"] = {"correct": effective * pr, "incorrect": 1.0 - effective,
                             "irrelevant": effective * (1 - pr)}
        return None

    @classmethod
    def report_section(cls, rows: list[dict[str, Any]]) -> ReportSection | None:
        return ReportSection(section=method_template("section.html.j2", "assay.methods.lemaj"),
                             item=method_template("item.html.j2", "assay.methods.lemaj"), context=lemaj_section(rows))

    def check_item(self, item: Item) -> str | None:
        document = item_document(item)
        if not document.strip() and self.config.without_document == "refuse":
            return ("LeMAJ checks the answer against a document: give 'document' (or 'contexts'), or pass "
                    "--without-document knowledge (without_document='knowledge' in Python) (field 'document')")
        if not split_sentences(item.response):
            return "the answer has no sentence to split into data points (field 'response')"
        if self.config.long_documents == "refuse" and len(document) > self.config.max_document_chars:
            return (f"the document has {len(document):,} characters, over max_document_chars "
                    f"({self.config.max_document_chars:,}) with long_documents=refuse (field 'document')")
        return None

    # the judge's view -------------------------------------------------------------------------
    def view(self, item: Item) -> dict[str, Any]:
        """What the judge is shown of the document: every paragraph's offsets, the shown ones."""
        document = item_document(item)
        spans = paragraph_spans(document, self.config.paragraph_chars)
        shown = choose_paragraphs(document, spans, item.query, item.response, self.config.max_document_chars)
        source = ("document" if item.document and item.document.strip() else "contexts" if spans else "knowledge")
        return {"strategy": "all" if len(shown) == len(spans) else "retrieve", "paragraphs": [list(s) for s in spans],
                "shown": [i + 1 for i in shown], "chars_total": len(document),
                "chars_shown": sum(spans[i][1] - spans[i][0] for i in shown), "source": source}

    def render(self, item: Item, view: dict[str, Any]) -> list[Any]:
        document = item_document(item)
        lines, previous = [], 0
        for number in view["shown"]:
            start, end = view["paragraphs"][number - 1]
            if number != previous + 1:
                lines.append("[…]")
            lines.append(f"[{number}] {document[start:end]}")
            previous = number
        if previous != len(view["paragraphs"]):
            lines.append("[…]")
        spans = sentence_spans(item.response)
        answer = "\n".join(f"[{n}] {item.response[s:e]}" for n, (s, e) in enumerate(spans, 1))
        reference = (fence("reference", item.reference.full_text()) if item.reference is not None
                     else "<reference>\n(no gold answer given: judge against the document)\n</reference>")
        rules = SOURCE_RULES["knowledge" if view["source"] == "knowledge" else "document"]
        shown_document = "\n\n".join(lines) if lines else "(no document given)"
        return self.prompt.render(expert=str(self.domain["expert"]), stringency=STRINGENCY[self.config.stringency],
                                  support_rule=rules[0], missing_rule=rules[1], query=item.query.strip(),
                                  document=fence("document", shown_document), reference=reference,
                                  answer=defuse(answer))

    def schema(self, sentences: int, shown: list[int]) -> dict[str, Any]:
        cfg = self.config
        cite: dict[str, Any] = ({"type": "array", "maxItems": 3, "items": {"type": "integer", "enum": shown}}
                                if shown else {"type": "array", "maxItems": 0, "items": {"type": "integer"}})
        yes_no = {"type": "string", "enum": ["yes", "no"]}
        point = {"type": "object", "additionalProperties": False,
                 "required": ["quote", "reason", "paragraphs", "supported", "relevant"],
                 "properties": {"quote": {"type": "string", "minLength": 1, "maxLength": cfg.max_quote_chars},
                                "reason": {"type": "string", "minLength": 1, "maxLength": cfg.max_reason_chars},
                                "paragraphs": cite, "supported": yes_no, "relevant": yes_no}}
        sentence = {"type": "object", "additionalProperties": False, "required": ["sentence", "points"],
                    "properties": {"sentence": {"type": "integer", "enum": list(range(1, sentences + 1))},
                                   "points": {"type": "array", "minItems": 1, "maxItems": 3, "items": point}}}
        missing = {"type": "object", "additionalProperties": False, "required": ["text", "paragraphs"],
                   "properties": {"text": {"type": "string", "minLength": 1, "maxLength": cfg.max_quote_chars},
                                  "paragraphs": {**cite, "minItems": 1} if shown else cite}}
        return {"type": "object", "additionalProperties": False, "required": ["sentences", "missing"],
                "properties": {"sentences": {"type": "array", "minItems": sentences, "maxItems": sentences,
                                             "items": sentence},
                               "missing": {"type": "array", "maxItems": cfg.max_missing, "items": missing}}}

    def _max_tokens(self, sentences: int) -> int:
        """Room for two LDPs a sentence of half-length quotes and reasons, and the missing points."""
        per_point = (self.config.max_quote_chars // 2 + self.config.max_reason_chars) // 3 + 30
        return 64 + sentences * (12 + 2 * per_point) + self.config.max_missing * 60

    # evaluation ---------------------------------------------------------------------------------
    async def _juror(self, item: Item, client: JudgeClient, view: dict[str, Any], n: int,
                     spans: list[tuple[int, int]], sampled: bool) -> tuple[list[dict[str, Any]] | Unscored, list[str]]:
        shown = view["shown"]

        def check(out: Tagging) -> None:
            numbers = [s.sentence for s in out.sentences]
            if numbers != list(range(1, len(spans) + 1)):
                raise OutputInvalid(f"give every sentence 1–{len(spans)} once, in order (got {numbers})")
            points = [p for s in out.sentences for p in s.points]
            for cited in [*(p.paragraphs for p in points), *(m.paragraphs for m in out.missing)]:
                wrong = [c for c in cited if c not in shown]
                if wrong:
                    raise OutputInvalid(f"paragraph(s) {wrong} were not shown")

        soft = self.config.verdicts == "soft"
        out = await generate_structured(
            client, self.render(item, view), Tagging,
            GenerateConfig(temperature=self.config.sample_temperature if sampled else self.config.temperature,
                           max_tokens=self._max_tokens(len(spans)), seed=self.config.seed + n,
                           json_schema=self.schema(len(spans), shown), logprobs=soft,
                           top_logprobs=self.config.top_logprobs if soft else 0),
            check=check, max_reasks=self.config.max_reasks, metric="correctness")
        if out.value is None:
            assert out.unscored is not None
            return out.unscored, out.keys
        points = [(s.sentence, p) for s in out.value.sentences for p in s.points]
        probs: dict[str, list[float]] = {}
        if soft:
            assert out.completion is not None
            for field in ("supported", "relevant"):
                found = field_label_probs(out.completion, field, ("yes", "no")) or []
                if [f.greedy for f in found] != [getattr(p, field) for _, p in points]:
                    return Unscored(reason=f"soft verdicts: the judge's logprobs cover {len(found)} of {len(points)} "
                                           f"'{field}' values (or disagree with the parsed ones)",
                                    raw_output=out.completion.text, metric="correctness"), out.keys
                probs[field] = [f.p["yes"] for f in found]
        passages = EvidencePassages(item, view)
        ldps: list[dict[str, Any]] = []
        for k, (sentence, p) in enumerate(points):
            start, end, how = locate(item.response, spans, sentence, p.quote)
            text = item.response[start:end]
            citation = sorted(set(p.paragraphs))
            ldp = {"text": text, "tag": p.tag, "start": start, "end": end, "citation": citation,
                   "sentence": sentence, "reason": p.reason, "located": how, "supported": p.supported,
                   "relevant": p.relevant, **passages.check(text, citation)}
            if how != "exact":
                ldp["judge_quote"] = p.quote
            counts_supported = p.supported == "yes"
            problems = []
            if ldp["figures_missing"]:
                figures = ", ".join(ldp["figures_missing"])
                problems.append(f"states {figures}, which its source passage does not contain")
            if ldp["names_missing"]:
                problems.append(f"names {', '.join(ldp['names_missing'])}, which the document never mentions")
            if problems and p.supported == "yes":
                ldp["downgraded"] = "called supported, but " + " and ".join(problems)
                if self.config.evidence_check == "require":
                    ldp["judge_tag"], ldp["tag"] = p.tag, "incorrect"
                    counts_supported = False
            if soft:
                ps = probs["supported"][k] if counts_supported else 0.0
                pr = probs["relevant"][k]
                ldp.update(p_supported=probs["supported"][k], p_relevant=pr,
                           p_tags={"correct": ps * pr, "incorrect": 1.0 - ps, "irrelevant": ps * (1.0 - pr)})
            ldps.append(ldp)
        for m in out.value.missing:
            ldps.append({"text": m.text.strip(), "tag": "missing", "start": None, "end": None,
                         "citation": sorted(set(m.paragraphs)), "sentence": None, "reason": None, "located": None})
        keys = list(out.keys)
        if self.config.verdicts == "direct":
            problem = await self._direct_checks(item, client, view, ldps, keys)
            if problem is not None:
                return problem, keys
        return ldps, keys

    async def evaluate(self, item: Item, client: JudgeClient) -> ItemResult:
        view = self.view(item)
        spans = sentence_spans(item.response)
        keys: list[str] = []
        jurors: list[list[dict[str, Any]]] = []
        failures: list[Unscored] = []
        members = getattr(client.backend, "members", None)
        if members is not None and self.config.samples > 1:
            raise ConfigError("a jury of judges answers once each: use samples=1 with jury/…")
        clients = ([client.member(k) for k in range(len(members))] if members is not None
                   else [client] * self.config.samples)
        for n, juror in enumerate(clients):
            result, used = await self._juror(item, juror, view, 0 if members is not None else n, spans,
                                             sampled=members is None and self.config.samples > 1)
            keys += used
            if isinstance(result, Unscored):
                failures.append(result)
            else:
                jurors.append(result)
        details: dict[str, Any] = {"document_view": view, "sentences": [list(s) for s in spans]}
        enough = bool(jurors) if len(clients) == 1 else len(jurors) * 2 > len(clients)
        if not enough:
            reason = "; ".join(dict.fromkeys(f.reason for f in failures))
            if len(clients) > 1:
                reason = f"{len(failures)} of {len(clients)} jurors unparseable: {reason}"
            return ItemResult(scores=dict.fromkeys(self.metrics), call_keys=keys, details=details,
                              unscored=[Unscored(reason=reason, raw_output=failures[0].raw_output, metric=m)
                                        for m in self.metrics])
        if len(jurors) == 1:
            ldps = sorted(jurors[0], key=lambda d: (d["start"] is None, d["start"] or 0, d["end"] or 0))
        else:
            ldps = aggregate_jurors(jurors, self.config.aggregate, self.config.matcher, self.config.match_threshold)
            details["jury"] = {"jurors": len(clients), "parsed": len(jurors), "aggregate": self.config.aggregate,
                               "matcher": self.config.matcher,
                               **({"judges": [m.name for m in members]} if members is not None else {})}
        counts = {t: sum(1 for d in ldps if d["tag"] == t) for t in TAGS}
        if self.config.verdicts in ("soft", "direct"):
            expected = {t: sum(d["p_tags"][t] for d in ldps if d["tag"] != "missing") for t in TAGS[:3]}
            expected["missing"] = float(counts["missing"])
            scores, unscored = ldp_scores(expected, self.config.beta)
            details["expected_counts"] = expected
        else:
            scores, unscored = ldp_scores(counts, self.config.beta)
        details.update(ldps=ldps, counts=counts, verdicts=self.config.verdicts)
        return ItemResult(scores=scores, unscored=unscored, details=details, call_keys=keys)

    def estimate(self, items: list[Item]) -> CallEstimate:
        total = CallEstimate()
        for item in items:
            view = self.view(item)
            prompt = (len(self.prompt.system) + len(item.query) + view["chars_shown"] + len(item.response)) // 4 + 80
            n = len(sentence_spans(item.response))
            total += CallEstimate(calls=self.config.samples, prompt_tokens=prompt * self.config.samples,
                                  completion_tokens=self.config.samples * min(self._max_tokens(n), 60 * n + 120))
        return total

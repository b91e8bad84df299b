"""PReMISE discovery: a policy rubric from preference pairs (PReMISE, arXiv:2605.30803 §3.1, Algorithm 1).

Stage 1 — per pair, the judge names the qualities that separate the preferred answer from the
other and scores both 1–10 (F.1). The two answers are shown in a seeded random order so that
the preferred one is not always first; a criterion whose scores contradict the preference is
kept (the paper keeps every extracted criterion) and its scores are recorded. Each candidate
starts with support σ = 1 and its pair as source.

Stage 2 — levels of embed → cluster → sub-group → describe: candidates are embedded
(:func:`assay.judge.embeddings.similarity`; sentence embeddings, or TF-IDF offline), clustered by
cosine-distance average-link agglomerative clustering (scikit-learn) into k = max(1, ⌊|C|/T⌋)
clusters, any cluster over 2T split again the same way. A cluster of one is carried forward;
for a larger one the judge proposes subgroups (F.2: every id once, subgroups of 2 to 5, batches
of at most 150 ids; the operational-distinctness test). F.2 asks for lists of ids; the 1.5B
judge broke "every id exactly once" in 7 of 8 calls that way, so the judge gives one group
number per id, in order (0: keep separate; ids sharing a number merge) — the same partition,
with "every id once" enforced by the output's shape and "at most 5 a group" checked and writes one criterion for each
subgroup (F.3), whose σ is the sum and sources the union of its members'. Unmerged members are
carried forward. The loop stops after ``max_levels`` (10), when a level leaves at least 95% of
the pool, or from level 2 on when the pool is at most ``pool_size``.

A sub-group or describe call that stays unparseable after its re-asks merges nothing: the
cluster's members are carried forward unmerged (the paper's "when in doubt, keep separate"),
and the trace records the failure with its reason.

Stage 3 — selection: criteria with σ ≥ ``min_support``, then MMR (:func:`.metrics.mmr_select`:
relevance log(1+σ), diversity the maximum cosine to those chosen, weight λ) with the genericity
filter (a criterion must come from at least ``min_sources`` distinct pairs).

Every judge call goes through the store's cache, and each stage's parts are committed as they
finish (:mod:`assay.engine.stages`): a killed discovery resumes where it stopped.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, Field, model_validator

from assay.core._lazy import lazy_module
from assay.core.types import GenerateConfig
from assay.engine.stages import run_stage
from assay.judge.embeddings import Matcher, similarity
from assay.judge.prompts import defuse, load_prompt
from assay.judge.runner import JudgeClient, canonical_json
from assay.judge.structured import OutputInvalid, generate_structured
from assay.methods.premise.files import Criterion, PreferencePair, RubricSet, slug
from assay.methods.premise.metrics import mmr_select
from assay.store import Store

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

PROMPTS = ("prompts/extraction", "prompts/subgroup", "prompts/describe")


class DiscoveryConfig(BaseModel):
    """Algorithm 1's parameters (App. A)."""

    k: int = Field(default=20, ge=1)
    """Target rubric size K."""
    cluster_size: int = Field(default=8, ge=2)
    """Target cluster size T."""
    max_levels: int = Field(default=10, ge=1)
    pool_size: int | None = Field(default=None, ge=1)
    """Stop consolidating from level 2 on once the pool is this small (default 2K)."""
    min_support: int = Field(default=2, ge=1)
    """n_min: a criterion must consolidate at least this many raw candidates."""
    min_sources: int = Field(default=2, ge=1)
    """Genericity filter: from at least this many distinct pairs."""
    diversity: float = Field(default=0.5, ge=0, le=1)
    """MMR diversity weight λ."""
    per_pair: tuple[Annotated[int, Field(ge=1, le=50)], Annotated[int, Field(ge=1, le=50)]] = (3, 5)
    """How many criteria the extractor names per pair (F.1: 3–5): (minimum, maximum)."""
    max_group: int = Field(default=5, ge=2)
    batch: int = Field(default=150, ge=2)
    matcher: Matcher = "embeddings"
    seed: int = 0
    max_reasks: int = Field(default=2, ge=0)
    max_description_chars: int = Field(default=400, ge=60)

    @model_validator(mode="after")
    def _min_below_max(self) -> DiscoveryConfig:
        low, high = self.per_pair
        if low > high:
            raise ValueError(f"per_pair=({low}, {high}): the minimum is above the maximum")
        return self


class _Extracted(BaseModel):
    name: str
    description: str
    score_a: int = Field(ge=1, le=10)
    score_b: int = Field(ge=1, le=10)


class _Extraction(BaseModel):
    criteria: list[_Extracted]


class _Assignment(BaseModel):
    id: str
    group: int = Field(ge=0)


class _SubGroups(BaseModel):
    assignments: list[_Assignment]

    def groups(self) -> tuple[list[list[str]], list[str]]:
        """(subgroups, unmerged): ids sharing a group number > 0 form a subgroup; group 0 and
        numbers used once are unmerged."""
        by_group: dict[int, list[str]] = {}
        for a in self.assignments:
            by_group.setdefault(a.group, []).append(a.id)
        subgroups = [ids for g, ids in sorted(by_group.items()) if g > 0 and len(ids) >= 2]
        unmerged = [a.id for a in self.assignments if a.group == 0 or len(by_group[a.group]) < 2]
        return subgroups, unmerged


class _Described(BaseModel):
    id: str
    description: str


@dataclass
class Candidate:
    id: str
    description: str
    support: int = 1
    sources: list[str] = field(default_factory=list)
    members: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "description": self.description, "support": self.support,
                "sources": self.sources, "members": self.members}


def cluster(sims: np.ndarray, size: int) -> list[list[int]]:
    """Average-link agglomerative clustering on cosine distance into max(1, ⌊n/T⌋) clusters,
    clusters over 2T split again the same way (Algorithm 1, lines 16–18). Lists of indices."""
    from sklearn.cluster import AgglomerativeClustering

    def split(indices: list[int]) -> list[list[int]]:
        n = len(indices)
        k = max(1, n // size)
        if n < 2 or (k == 1 and n <= 2 * size):
            return [indices]
        k = max(k, 2)
        sub = sims[np.ix_(indices, indices)]
        labels = AgglomerativeClustering(n_clusters=k, metric="precomputed", linkage="average").fit_predict(
            np.clip(1.0 - sub, 0.0, 2.0))
        groups = [[indices[i] for i in range(n) if labels[i] == c] for c in range(k)]
        out: list[list[int]] = []
        for group in groups:
            out += split(group) if len(group) > 2 * size else [group]
        return out

    return split(list(range(sims.shape[0])))


def _check_subgroups(ids: list[str], max_group: int) -> Any:
    def check(out: _SubGroups) -> None:
        listed = [a.id for a in out.assignments]
        if listed != ids:
            raise OutputInvalid(f"give one assignment per id, in order {ids}; got {listed}")
        for group in out.groups()[0]:
            if len(group) > max_group:
                raise OutputInvalid(f"group with ids {group} has {len(group)} members; at most {max_group} a group")
    return check


class Discovery:
    """Algorithm 1 over a judge client and a store (for the stages)."""

    def __init__(self, config: DiscoveryConfig | None = None) -> None:
        self.config = config or DiscoveryConfig()
        self.prompts = {name.split("/")[1]: load_prompt(name, package=__package__) for name in PROMPTS}

    def manifest(self) -> dict[str, Any]:
        return {"config": self.config.model_dump(mode="json"),
                "prompt_sha256": {k: p.sha256 for k, p in self.prompts.items()}}

    # stage 1 --------------------------------------------------------------------------------------
    async def extract(self, pair: PreferencePair, client: JudgeClient) -> dict[str, Any]:
        cfg = self.config
        chosen_first = random.Random(f"{cfg.seed}:{pair.id}").random() < 0.5
        a, b = (pair.chosen, pair.rejected) if chosen_first else (pair.rejected, pair.chosen)
        low, high = cfg.per_pair
        messages = self.prompts["extraction"].render(min=str(low), max=str(high), prompt=defuse(pair.prompt.strip()),
                                                     answer_a=defuse(a.strip()), answer_b=defuse(b.strip()),
                                                     winner="A" if chosen_first else "B")
        item = {"type": "object", "additionalProperties": False,
                "required": ["name", "description", "score_a", "score_b"],
                "properties": {"name": {"type": "string", "minLength": 2, "maxLength": 60},
                               "description": {"type": "string", "minLength": 10,
                                               "maxLength": cfg.max_description_chars},
                               "score_a": {"type": "integer", "minimum": 1, "maximum": 10},
                               "score_b": {"type": "integer", "minimum": 1, "maximum": 10}}}
        schema = {"type": "object", "additionalProperties": False, "required": ["criteria"],
                  "properties": {"criteria": {"type": "array", "minItems": low, "maxItems": high, "items": item}}}
        out = await generate_structured(client, messages, _Extraction,
                                        GenerateConfig(temperature=0.0, max_tokens=80 + high * 140, seed=cfg.seed,
                                                       json_schema=schema), max_reasks=cfg.max_reasks)
        if out.value is None:
            assert out.unscored is not None
            return {"unscored": out.unscored.model_dump()}
        found = []
        for c in out.value.criteria:
            chosen, rejected = (c.score_a, c.score_b) if chosen_first else (c.score_b, c.score_a)
            found.append({"name": c.name.strip(), "description": c.description.strip(),
                          "score_chosen": chosen, "score_rejected": rejected})
        return {"criteria": found, "chosen_shown_first": chosen_first}

    # stage 2 --------------------------------------------------------------------------------------
    async def consolidate(self, members: list[Candidate], client: JudgeClient) -> dict[str, Any]:
        """One cluster: subgroups (in batches), a description for each; failures merge nothing."""
        cfg = self.config
        out: list[Candidate] = []
        failures: list[str] = []
        for start in range(0, len(members), cfg.batch):
            batch = members[start:start + cfg.batch]
            ids = [f"c{n}" for n in range(1, len(batch) + 1)]
            listing = "\n".join(f"{i}: {c.description}" for i, c in zip(ids, batch, strict=True))
            assignment = {"type": "object", "additionalProperties": False, "required": ["id", "group"],
                          "properties": {"id": {"type": "string", "enum": ids},
                                         "group": {"type": "integer", "enum": list(range(0, len(batch) // 2 + 1))}}}
            schema = {"type": "object", "additionalProperties": False, "required": ["assignments"],
                      "properties": {"assignments": {"type": "array", "minItems": len(batch),
                                                     "maxItems": len(batch), "items": assignment}}}
            grouped = await generate_structured(
                client, self.prompts["subgroup"].render(max_group=str(cfg.max_group), criteria=listing), _SubGroups,
                GenerateConfig(temperature=0.0, max_tokens=40 + 16 * len(batch), seed=cfg.seed, json_schema=schema),
                check=_check_subgroups(ids, cfg.max_group), max_reasks=cfg.max_reasks)
            if grouped.value is None:
                assert grouped.unscored is not None
                failures.append(f"subgroup: {grouped.unscored.reason}")
                out += batch
                continue
            by_id = dict(zip(ids, batch, strict=True))
            subgroups, unmerged = grouped.value.groups()
            out += [by_id[i] for i in unmerged]
            for group in subgroups:
                parts = [by_id[i] for i in group]
                text = "\n".join(f"- {c.description}" for c in parts)
                schema = {"type": "object", "additionalProperties": False, "required": ["id", "description"],
                          "properties": {"id": {"type": "string", "minLength": 2, "maxLength": 60},
                                         "description": {"type": "string", "minLength": 60,
                                                         "maxLength": cfg.max_description_chars}}}
                described = await generate_structured(
                    client, self.prompts["describe"].render(criteria=text), _Described,
                    GenerateConfig(temperature=0.0, max_tokens=60 + cfg.max_description_chars // 3, seed=cfg.seed,
                                   json_schema=schema), max_reasks=cfg.max_reasks)
                if described.value is None:
                    assert described.unscored is not None
                    failures.append(f"describe: {described.unscored.reason}")
                    out += parts
                    continue
                out.append(Candidate(id=slug(described.value.id), description=described.value.description.strip(),
                                     support=sum(c.support for c in parts),
                                     sources=sorted({s for c in parts for s in c.sources}),
                                     members=[c.id for c in parts]))
        return {"candidates": [c.as_json() for c in out], "failures": failures}

    # the whole algorithm --------------------------------------------------------------------------
    async def run(self, pairs: list[PreferencePair], client: JudgeClient, store: Store) -> tuple[RubricSet,
                                                                                                 dict[str, Any]]:
        cfg = self.config
        base = {"discovery": self.manifest(), "judge": client.identity}
        extracted = await run_stage(store, "premise.extract", {**base, "pairs": [p.model_dump() for p in pairs]},
                                    {p.id: self._extract_part(p, client) for p in pairs}, window=4 * client.concurrency)
        pool: list[Candidate] = []
        failed_pairs = []
        for pid, value in extracted.parts.items():
            if "unscored" in value:
                failed_pairs.append({"pair": pid, "reason": value["unscored"]["reason"]})
                continue
            for n, c in enumerate(value["criteria"], 1):
                pool.append(Candidate(id=f"{pid}.{n}.{slug(c['name'])}", description=f"{c['name']}: {c['description']}",
                                      sources=[pid], members=[]))
        trace: dict[str, Any] = {"pairs": len(pairs), "pairs_failed": failed_pairs,
                                 "levels": [{"level": 0, "pool": len(pool)}]}
        pool_limit = cfg.pool_size or 2 * cfg.k
        for level in range(cfg.max_levels):
            if level >= 2 and len(pool) <= pool_limit:
                trace["stopped"] = f"pool of {len(pool)} is at most {pool_limit}"
                break
            if len(pool) < 2:
                trace["stopped"] = "fewer than two candidates"
                break
            sims = similarity([c.description for c in pool], [c.description for c in pool], cfg.matcher)
            groups = cluster(sims, cfg.cluster_size)
            manifest = {**base, "level": level, "pool": [c.as_json() for c in pool]}
            parts = {f"{n:05d}": self._consolidate_part([pool[i] for i in g], client)
                     for n, g in enumerate(groups) if len(g) > 1}
            done = await run_stage(store, "premise.consolidate", manifest, parts, window=4 * client.concurrency)
            following = [pool[g[0]] for g in groups if len(g) == 1]
            failures: list[str] = []
            for value in done.parts.values():
                following += [Candidate(**c) for c in value["candidates"]]
                failures += value["failures"]
            merged = sum(1 for c in following if c.members)
            trace["levels"].append({"level": level + 1, "clusters": len(groups), "pool": len(following),
                                    "new_criteria": merged, "failures": failures})
            shrank = len(following) < 0.95 * len(pool)
            pool = _unique_ids(following)
            if not shrank:
                trace["stopped"] = "the level shrank the pool by less than 5%"
                break
        else:
            trace["stopped"] = f"{cfg.max_levels} levels"
        eligible = [c for c in pool if c.support >= cfg.min_support]
        trace["eligible"] = len(eligible)
        sims = similarity([c.description for c in pool], [c.description for c in pool], cfg.matcher)
        chosen = mmr_select([c.support for c in pool], [set(c.sources) for c in pool], sims.tolist(), cfg.k,
                            diversity=cfg.diversity, min_support=cfg.min_support, min_sources=cfg.min_sources)
        trace["selected"] = len(chosen)
        criteria = [Criterion(id=pool[i].id, description=pool[i].description, support=pool[i].support,
                              sources=pool[i].sources) for i in chosen]
        provenance = {"method": "premise.discover", "pairs": len(pairs), "judge": client.identity,
                      "config": cfg.model_dump(mode="json"),
                      "manifest_sha256": _sha(canonical_json(base)), "trace": trace}
        return RubricSet(criteria=criteria, source="premise.discover", provenance=provenance), trace

    def _extract_part(self, pair: PreferencePair, client: JudgeClient) -> Any:
        async def part() -> dict[str, Any]:
            return await self.extract(pair, client)
        return part

    def _consolidate_part(self, members: list[Candidate], client: JudgeClient) -> Any:
        async def part() -> dict[str, Any]:
            return await self.consolidate(members, client)
        return part


def _unique_ids(pool: list[Candidate]) -> list[Candidate]:
    """Consolidated criteria may come back with the same id: number the repeats."""
    seen: dict[str, int] = {}
    out = []
    for c in pool:
        n = seen.get(c.id, 0)
        seen[c.id] = n + 1
        out.append(c if n == 0 else Candidate(id=f"{c.id}_{n + 1}", description=c.description, support=c.support,
                                              sources=c.sources, members=c.members))
    return out


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


__all__ = ["Discovery", "DiscoveryConfig", "cluster"]

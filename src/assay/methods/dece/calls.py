"""Settings of DeCE's judge calls, and the extraction of statements (criteria, elements), one
sample or the majority of several."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from assay.core.types import GenerateConfig, Unscored
from assay.judge.runner import JudgeClient
from assay.judge.structured import generate_structured
from assay.methods.dece.checks import check_nonempty_list, clean_list
from assay.methods.dece.schemas import list_schema


def generate_config(cfg: Any, temperature: float, max_tokens: int, schema: dict[str, Any],
                    soft: bool = False) -> GenerateConfig:
    """A call's settings; ``soft`` asks for the logprobs a soft verdict reads."""
    return GenerateConfig(temperature=temperature, max_tokens=max_tokens, seed=cfg.seed,
                          json_schema=schema, logprobs=soft, top_logprobs=cfg.top_logprobs if soft else 0)


async def extract(cfg: Any, client: JudgeClient, messages: list[Any], model: type[BaseModel], field: str,
                  cap: int, metric: str) -> tuple[list[str] | None, Unscored | None, list[str], list[int] | None]:
    """One extraction, or with ``extraction_samples`` k > 1 the statements a majority of k
    samples share (seeds seed..seed+k−1; sample 1 is the call a one-sample run makes, so it
    is shared with such runs' cache). A sample that fails is left out of the vote; if every
    sample fails, the first failure is the reason. Returns the statements, the problem, the
    call keys and each statement's votes (None for one sample)."""
    config = generate_config(cfg, cfg.extraction_temperature, 64 + cap * (cfg.max_text_chars // 3),
                             list_schema(field, cap, cfg.max_text_chars, cfg.min_text_chars))
    keys: list[str] = []
    samples: list[list[str]] = []
    first_problem: Unscored | None = None
    for n in range(cfg.extraction_samples):
        sample = config.model_copy(update={"seed": cfg.seed + n})
        outcome = await generate_structured(client, messages, model, sample,
                                            check=check_nonempty_list(field), max_reasks=cfg.max_reasks,
                                            metric=metric)
        keys += outcome.keys
        if outcome.value is None:
            first_problem = first_problem or outcome.unscored
            continue
        samples.append(clean_list(getattr(outcome.value, field))[:cap])
    if not samples:
        return None, first_problem, keys, None
    if cfg.extraction_samples == 1:
        return samples[0], None, keys, None
    from assay.judge.embeddings import consensus
    kept = consensus(samples, cfg.sample_matcher, cfg.sample_threshold,
                     min_votes=cfg.extraction_samples // 2 + 1)[:cap]
    if not kept:
        return None, Unscored(reason=f"no {field[:-1]} was shared by a majority of {cfg.extraction_samples} "
                                     f"samples ({len(samples)} parsed)", metric=metric), keys, None
    return [text for text, _ in kept], None, keys, [votes for _, votes in kept]

"""``--dry-run``: the calls, tokens, cost and (for a local judge) time a run would take, printed in one
line before any judge is called. :mod:`assay.cli.kit` imports it and gives
:func:`dry_run` to the commands with the rest of the kit."""

from __future__ import annotations

import types
from typing import Any

from assay.cli._console import console
from assay.core.method import OPENAI_CACHE_MIN, OPENAI_CACHE_STEP
from assay.engine import estimate
from assay.judge.backends import check_judge
from assay.judge.prices import caches_like_openai, given_price, list_price

__all__ = ["CALL_OVERHEAD_S", "EMBEDDED_SPEED", "counted_units", "dry_run", "embedded_seconds", "settle_for_judge"]


EMBEDDED_SPEED = (20.0, 5.0)
"""Prompt and generated tokens per second of the embedded judge (Qwen2.5-Coder-1.5B Q4_K_M) on the
slowest 2-core CPU we measured (an AVX2 AMD EPYC: 20 and ~5; an AVX-512 Xeon reads 52-69 and
generates 12-21). ``--dry-run`` uses this machine's own figures once `assay doctor` has timed them."""
CALL_OVERHEAD_S = 0.05
"""Seconds a local judge call costs beyond its tokens (sampling set-up, the store)."""


def settle_for_judge(method: str, options: dict[str, Any], judge: str,
                     judge_options: dict[str, Any] | None = None) -> tuple[dict[str, Any], str | None]:
    """The method options a run on ``judge`` would use: DeCE's ``verdicts="auto"`` becomes direct
    where the judge gives label probabilities (as the run settles it), else hard. With them, why the
    settling is a guess where the judge cannot be built here (no API key yet), else None."""
    from assay.core.registry import build_method

    built = build_method(method, **options)
    if not hasattr(built, "for_judge") or not judge:
        return options, None
    provider = judge.split("/", 1)[0]
    guessed = None
    if provider == "llamacpp":
        from assay.judge.backends._registry import parse_judge_options

        label_probs = True  # logprobs of what it writes only when built with logits_all
        logprobs = parse_judge_options(judge, judge_options).get("logits_all") is True
    else:
        try:
            from assay.judge.backends import get_backend

            capabilities = get_backend(judge).capabilities
            label_probs, logprobs = bool(capabilities.label_probs), bool(capabilities.logprobs)
        except Exception as exc:  # an estimate of a judge that cannot be built here, said so
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            # the OpenAI backend gives label probabilities whatever its key or server (its capabilities are
            # fixed); another judge is settled as one that does not, and the line says both
            label_probs = logprobs = provider == "openai"
            guessed = f"the judge cannot be built here ({reason}), so a run would stop before its first call"
    settled: Any = built.for_judge(types.SimpleNamespace(label_probs=label_probs))
    verdicts = getattr(getattr(settled, "config", None), "verdicts", None)
    if getattr(getattr(settled, "config", None), "probabilities", None) == "auto":  # DICE's analysis decision:
        # read from logprobs, or sampled several times by a judge without them (6 calls an order, not 2)
        options = {**options, "probabilities": "logprobs" if logprobs else "samples"}
    if guessed is not None and verdicts and options.get("verdicts") in (None, "auto"):
        other = "" if label_probs else "; direct verdicts if it gives label probabilities"
        guessed = f"{verdicts} verdicts as {judge} would settle them{other}: {guessed}"
    elif guessed is not None and verdicts:
        guessed = f"{verdicts} verdicts; {guessed}"
    return ({**options, "verdicts": verdicts} if verdicts else options), guessed


def embedded_seconds(est: Any, judge: str) -> tuple[float, str] | None:
    """How long a local judge takes for ``est``, and at what speed: measured here by `assay doctor`
    (for this model file and llama.cpp build), else, for the embedded judge, the slowest machine's
    speed; None for another model never measured here (no speed of ours holds for it: SmolLM2 reads
    prompts 15-20x faster than the embedded judge)."""
    from assay.judge.doctor import measured_speed, stale_speed

    model = judge.split("/", 1)[1].split("@", 1)[0] if "/" in judge else "default"
    model = model or "default"
    measured = measured_speed(model)
    if measured is None and model != "default":
        return None
    stale = " (its last measurement here was of another model file or llama.cpp build)" if stale_speed(model) else ""
    prompt_tps, generated_tps, source = measured or (
        *EMBEDDED_SPEED, f"the slowest 2-core CPU we measured; `assay doctor` times this machine{stale}")
    seconds = est.read_tokens / prompt_tps + est.completion_tokens / generated_tps + est.calls * CALL_OVERHEAD_S
    return seconds, f"{prompt_tps:.0f} prompt and {generated_tps:.0f} generated tokens/s, {source}"


def counted_units(items: list, method: str, options: dict[str, Any]) -> int:
    """What the run's summary will count as its items: its units where they are all known before it
    starts (a pairwise run's pairs, not the two answers of each), else the items read."""
    from assay.core.method import Method
    from assay.core.registry import build_method

    built = build_method(method, **options)
    if type(built).next_units is not Method.next_units:  # a scheduler (a tournament's rounds): not known yet
        return len(items)
    return len(built.units(items))


def dry_run(items: list, method: str, options: dict[str, Any], price_in: float | None, price_out: float | None,
            judge: str = "", *, price_cached: float | None = None,
            judge_options: dict[str, Any] | None = None, data_source: str | None = None) -> None:
    if judge:  # the judge's name as the run checks it: a dry run of a judge that cannot run says so
        check_judge(judge)
    options, guessed = settle_for_judge(method, options, judge, judge_options)
    est = estimate(items, method, data_source=data_source, **options)
    counted = counted_units(items, method, options)
    line = (f"dry run: {counted} item(s) → ≈{est.calls} judge calls, ≈{est.prompt_tokens} prompt + "
            f"≈{est.completion_tokens} completion tokens")
    if est.calls == 0:
        console.print(f"dry run: {counted} item(s) → no judge call (this method needs no judge)", soft_wrap=True)
        return
    if guessed is not None:
        line += f", {guessed}"
    elif options.get("verdicts"):
        line += f", {options['verdicts']} verdicts"
    if est.assumes:
        line += f", assuming {est.assumes}"
    given = given_price(price_in, price_cached, price_out)
    known = list_price(judge)
    if given is not None or known is not None:
        price = given if given is not None else known
        assert price is not None
        where = "the given price" if given is not None else f"{judge}'s list price"
        cost = price.cost(est.prompt_tokens, est.completion_tokens)
        line += f" → ≈${cost:.4f} at {where} ({price.shown()})"
        if caches_like_openai(judge) or price_cached is not None:
            # OpenAI's prompt cache works unasked; a --price-cached says the provider has one: its rule assumed
            if est.cached_tokens is None:
                line += ("; caching not estimated: this method's estimate does not say which calls share a "
                         "prompt start")
            else:
                cached = min(est.cached_tokens, est.prompt_tokens)
                line += (f"; ≈${price.cost(est.prompt_tokens, est.completion_tokens, cached):.4f} with "
                         f"≈{cached} prompt tokens billed as cached (OpenAI's rule assumed: of a prompt of "
                         f"≥{OPENAI_CACHE_MIN:,} tokens, the start it shares with a recent call, in "
                         f"{OPENAI_CACHE_STEP}-token steps)")
        else:
            line += "; no prompt cache assumed for this judge"
    elif judge.startswith("llamacpp/"):
        timed = embedded_seconds(est, judge)
        if timed is None:
            model = judge.split("/", 1)[1].split("@", 1)[0]
            line += (f" → no cost (a local judge); ≈{est.read_tokens} new prompt tokens to read (calls of one answer "
                     f"share their start); time not estimated: no speed of this model was measured here "
                     f"(`assay doctor --model {model}` measures it)")
        else:
            seconds, speed = timed
            shown = f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
            line += (f" → no cost (a local judge); ≈{shown} reading ≈{est.read_tokens} new prompt tokens "
                     f"(calls of one answer share their start) and writing ≈{est.completion_tokens} at {speed}")
            from assay.judge.backends._registry import parse_judge_options

            # typed as the run reads them ("off", "no", "0" ... are False): with the store off no later run loads
            # anything
            kept_off = parse_judge_options(judge, judge_options).get("prefix_cache") is False
            if est.instruction_tokens and not kept_off:
                kept = est.model_copy(update={"evaluated_tokens": est.read_tokens - est.instruction_tokens})
                later, _ = embedded_seconds(kept, judge) or (seconds, speed)
                line += (f"; ≈{later:.0f} s " if later < 120 else f"; ≈{later / 60:.1f} min ") + \
                    (f"where an earlier run on this machine kept the ≈{est.instruction_tokens} tokens of "
                     "instructions (the embedded judge keeps them on disk unless --judge-opt prefix_cache=false)")
    else:
        line += (" → no price known for this judge: give --price-in, --price-out and, where the provider "
                 "bills a repeated prompt start less, --price-cached (USD per 1M tokens)")
    console.print(line + "; cached calls cost nothing", soft_wrap=True)

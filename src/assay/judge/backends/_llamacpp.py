"""In-process GGUF judge on llama-cpp-python: the offline default.

Names: ``llamacpp/default`` (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, resolved by
:func:`assay.judge.model.resolve_model`), ``llamacpp/smollm2`` (SmolLM2-135M, for plumbing tests) or
``llamacpp//path/to/model.gguf``.

One model instance is not re-entrant, so calls run one at a time in a worker thread
(``max_concurrency = 1``). llama.cpp reuses the longest common prompt prefix of consecutive
calls; methods lay their prompts out to profit from that. Beyond the last call, the backend keeps
a few snapshots of the KV cache (``state_slots``, one per family of prompts that share a long
start, e.g. one method's instructions): a call whose prompt shares a longer start with a
snapshot than with the current cache restores it first (a few milliseconds) instead of reading
those tokens again. A method that asks four kinds of question per answer, each with its own
instructions, then reads each set of instructions once per run, not once per answer. A restored
prefix gives the same logits as evaluating the prompt in two steps at that point. Across runs, a
prompt's system message (a method's instructions) is read in a step of its own and its KV state
kept on disk (:mod:`assay.judge.backends._prefixes`, ``prefix_cache``): the next run, in any
process, loads it instead of reading it again, with the same numbers. A cancelled call (the runner's
timeout, Ctrl-C, SIGTERM) stops its generation at the next token; reading the prompt itself
cannot be interrupted.

The model runs in a child process by default (``process="child"``, see :mod:`assay.judge.backends._child`):
a crash in native code (an instruction the CPU refuses) fails the run with a message instead of
killing assay, and a cancelled call can be stopped by killing the child. ``--judge-opt
process=inline`` runs it in assay's own process (what the child itself does).

JSON-schema output is constrained by a grammar built in :mod:`assay.judge.backends._fastgrammar`
(strings cannot hold raw control characters, unlike llama-cpp-python's own) and sampled there
too (the grammar checks the chosen token first instead of the whole vocabulary: same greedy
output, fewer grammar passes);
``grammar_sampling="stock"`` (``--judge-opt grammar_sampling=stock``) uses llama-cpp-python's
own chain.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from assay.core.errors import AssayError, BackendError, ConfigError
from assay.core.types import Completion, GenerateConfig, Message, TokenLogprob, Usage
from assay.judge.backends._base import Capabilities, JudgeBackend
from assay.judge.backends._child import CallCancelled, ChildProcess
from assay.judge.backends._fastgrammar import ForcedDraft, json_schema_grammar, jump_safe
from assay.judge.cpu_build import usable_cpus
from assay.judge.model import MODEL_SHA256, resolve_model, smollm_model


class LlamaCppBackend(JudgeBackend):
    """A GGUF model run in-process by llama.cpp."""

    def __init__(self, model: str = "default", *, model_path: str | None = None, n_ctx: int = 8192,
                 n_threads: int | None = None, logits_all: bool = False,
                 grammar_sampling: str = "check-first", state_slots: int = 6, process: str = "child",
                 prefix_cache: bool = True, jump_forward: bool = False) -> None:
        if grammar_sampling not in ("check-first", "stock"):
            raise ConfigError(f"grammar_sampling must be check-first or stock, got {grammar_sampling!r}")
        if process not in ("child", "inline"):
            raise ConfigError(f"process must be child or inline, got {process!r}")
        self.process = process
        self._child: Any = None
        if process == "child":
            self._child = ChildProcess(f"llamacpp-{model}", _child_main, {
                "model": model, "model_path": model_path, "n_ctx": n_ctx, "n_threads": n_threads,
                "logits_all": logits_all, "grammar_sampling": grammar_sampling, "state_slots": state_slots,
                "prefix_cache": prefix_cache, "jump_forward": jump_forward})
        self.grammar_sampling = grammar_sampling
        self.model = model
        self.name = f"llamacpp/{model}"
        self.max_concurrency = 1
        self.n_ctx = n_ctx
        self.n_threads = n_threads or usable_cpus()
        self.logits_all = logits_all
        self.capabilities = Capabilities(json_schema=True, grammar=True, logprobs=logits_all,
                                         seed=True, max_context=n_ctx, label_probs=True)
        self._explicit_path = model_path
        self._path: Path | None = None
        self._sha: str | None = None
        self._llama: Any = None
        self._lock = threading.Lock()
        self._cancel: threading.Event | None = None
        self._formatter: Any = None
        if state_slots < 0:
            raise ConfigError(f"state_slots must be 0 or more, got {state_slots}")
        self.state_slots = state_slots
        self._states: OrderedDict[int, tuple[list[int], Any]] = OrderedDict()  # LRU: tokens, seq state
        self._state_serial = 0
        self._reading: _LogprobReader | None = None  # the logprobs of the generation under way
        self.prefix_cache = prefix_cache
        self.jump_forward = jump_forward  # forced JSON text in one step (_fastgrammar's docstring)
        self.last_jumped = 0  # tokens the last generation took without a choice (inline only)
        self._system_tokens: dict[str, list[int]] = {}  # a system message's templated tokens, alone
        self._prefix_identity: str | None = None

    def _resolve(self) -> Path:
        if self._path is None:
            if self.model == "default":
                self._path, self._sha = resolve_model(self._explicit_path).path, MODEL_SHA256
            elif self.model == "smollm2":
                self._path, self._sha = smollm_model()
            else:
                path = check_model_name(self.model, self._explicit_path)
                self._path = path
                self._sha = f"file:{path.name}:{path.stat().st_size}"
        return self._path

    def identity(self) -> dict[str, Any]:
        self._resolve()
        identity: dict[str, Any] = {"backend": "llamacpp", "model": self.model, "model_sha256": self._sha}
        if self.grammar_sampling != "check-first":  # the default is left out: keys stay stable
            identity["grammar_sampling"] = self.grammar_sampling
        if self.jump_forward:  # its replies can differ (float rounding of a batch): never served for the default's
            identity["jump_forward"] = True
        return identity

    def load(self) -> Any:
        """Load the model (idempotent); returns the ``llama_cpp.Llama`` instance."""
        with self._lock:
            if self._llama is None:
                try:
                    from llama_cpp import Llama
                except ImportError as exc:
                    raise ConfigError("the embedded judge needs: pip install 'assay[embedded]'") from exc
                factory: Any = Llama
                if self.grammar_sampling == "check-first":
                    from assay.judge.backends._fastgrammar import check_first_llama_class
                    factory = check_first_llama_class()
                # never llama.cpp's own logits_all: the logprobs of generated tokens are read from the
                # last output of each step (below), so the prompt's other tokens get no output row
                # n_threads_batch too: llama-cpp-python reads prompts with every core of the machine
                # otherwise, whatever n_threads says or the process may use
                llama = factory(model_path=str(self._resolve()), n_ctx=self.n_ctx, n_threads=self.n_threads,
                                n_threads_batch=self.n_threads, logits_all=False, verbose=False)
                step = llama.eval

                def eval_unless_cancelled(tokens: Any) -> None:
                    # llama.cpp evaluates the prompt, then each generated token, through eval: a
                    # cancelled call stops before its next step, with the KV cache consistent
                    cancel = self._cancel
                    if cancel is not None and cancel.is_set():
                        raise CallCancelled("the call was cancelled")
                    reading = self._reading
                    if reading is not None and reading.pending is not None and len(tokens):
                        reading.take(llama, int(tokens[0]))  # the token chosen from the last step's logits
                    step(tokens)
                    if reading is not None:
                        reading.pending = _last_token_logits(llama)

                llama.eval = eval_unless_cancelled
                self._llama = llama
            return self._llama

    # --- KV snapshots ---------------------------------------------------------------------
    def _restore_best(self, llama: Any, tokens: list[int]) -> None:
        """If a snapshot shares a longer start with ``tokens`` than the KV cache does (by at
        least :data:`MIN_STATE_GAIN` tokens), load it: the call then evaluates only the rest."""
        if not self._states:
            return
        current = _common_prefix(list(llama._input_ids[: llama.n_tokens]), tokens)
        best, best_len = None, current + MIN_STATE_GAIN - 1
        for key, (ids, _) in self._states.items():
            shared = _common_prefix(ids, tokens)
            if shared > best_len:
                best, best_len = key, shared
        if best is None:
            return
        ids, state = self._states[best]
        self._states.move_to_end(best)
        _set_state(llama, ids, state)

    # --- system messages kept on disk -----------------------------------------------------------
    def _system_length(self, llama: Any, messages: list[Message], tokens: list[int]) -> int:
        """How many first tokens of ``tokens`` are the prompt's system message, as templated (0 when
        the store is off, or the prompt has no system message followed by others)."""
        if not self.prefix_cache or len(messages) < 2 or messages[0].role != "system":
            return 0
        alone = self._system_tokens.get(messages[0].content)
        if alone is None:
            try:
                alone = llama.tokenize(self._chat_prompt(llama, messages[:1]).encode("utf-8"), add_bos=False,
                                       special=True)
            except Exception:  # a chat template that refuses a system message alone: nothing kept
                alone = []
            if len(self._system_tokens) >= 64:
                self._system_tokens.clear()
            self._system_tokens[messages[0].content] = alone
        # the templated system message alone ends with the assistant's turn, the prompt with the user's:
        # what they share is the system message's turn (and the token that opens the next one)
        return min(_common_prefix(alone, tokens), len(tokens) - 1)

    def _identity_for_states(self, llama: Any) -> str:
        """What shapes a stored state's bytes: the model file, llama.cpp's version and build, the window."""
        if self._prefix_identity is None:
            import llama_cpp

            path = self._resolve()
            model = self._sha if self.model in NAMED_MODELS else f"{path.resolve()}:{path.stat().st_size}:" \
                                                                 f"{path.stat().st_mtime_ns}"
            build = llama_cpp.llama_print_system_info()
            build = build.decode("utf-8", "replace") if isinstance(build, bytes) else str(build)
            self._prefix_identity = f"{model}|{llama_cpp.__version__}|{build}|n_ctx={self.n_ctx}"
        return self._prefix_identity

    def _prime(self, llama: Any, messages: list[Message], tokens: list[int]) -> int:
        """Put the prompt's system message in the KV cache if it is not there: loaded from the disk
        store, or read now from the first token on (in a step of its own, the same step a load stands
        for) and stored. Returns the tokens read here (0 when it was already there or loaded)."""
        from assay.judge.backends import _prefixes

        length = self._system_length(llama, messages, tokens)
        if length < _prefixes.MIN_TOKENS:
            return 0
        if _common_prefix(list(llama._input_ids[: llama.n_tokens]), tokens) >= length:
            return 0
        prefix, identity, directory = tokens[:length], self._identity_for_states(llama), _prefixes.prefix_dir()
        state = _prefixes.load(directory, identity, prefix)
        if state is not None and _set_state(llama, prefix, (ctypes.c_uint8 * len(state)).from_buffer_copy(state)):
            return 0
        llama.n_tokens = 0
        llama.eval(prefix)
        llama._requires_eval = True
        data = _get_state(llama)
        if data is not None:
            _prefixes.save(directory, identity, prefix, bytes(data))
        return length

    def _snapshot(self, llama: Any) -> None:
        """Keep the KV cache's current contents, replacing a snapshot of the same family (one
        whose start it shares for at least :data:`STATE_FAMILY` tokens) and the least recently
        used beyond ``state_slots``."""
        if self.state_slots == 0 or llama.n_tokens < STATE_FAMILY:
            return
        ids = list(llama._input_ids[: llama.n_tokens])
        for key, (old, _) in list(self._states.items()):
            if _common_prefix(old, ids) >= STATE_FAMILY:
                del self._states[key]
        state = _get_state(llama)
        if state is None:
            return
        self._state_serial += 1
        self._states[self._state_serial] = (ids, state)
        while len(self._states) > self.state_slots:
            self._states.popitem(last=False)

    def _generate_sync(self, messages: list[Message], config: GenerateConfig,
                       cancel: threading.Event | None = None) -> Completion:
        llama = self.load()
        kwargs: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": config.temperature,
            "top_p": config.top_p,
            "max_tokens": config.max_tokens,
        }
        if config.seed is not None:
            kwargs["seed"] = config.seed
        if config.json_schema is not None:  # our grammar, not response_format: see _fastgrammar
            kwargs["grammar"] = json_schema_grammar(config.json_schema)
        if config.logprobs:
            if not self.logits_all:
                raise ConfigError(f"{self.name} gives logprobs of what it writes only when loaded with "
                                  "--judge-opt logits_all=true (LlamaCppBackend(..., logits_all=True) in Python)")
        start = time.perf_counter()
        with self._lock:
            self._cancel = cancel
            prompt_ids = llama.tokenize(self._chat_prompt(llama, messages).encode("utf-8"), add_bos=False,
                                        special=True)
            self._check_fits(llama, len(prompt_ids))
            if self._states:
                self._restore_best(llama, prompt_ids)
            primed = self._prime(llama, messages, prompt_ids)
            before = list(llama._input_ids)  # what the KV cache holds from the previous call
            self._reading = _LogprobReader(max(1, config.top_logprobs)) if config.logprobs else None
            # forced text in one step, only where no logprob is read (a forced token has none)
            jump = self.jump_forward and config.json_schema is not None and not config.logprobs \
                and self.grammar_sampling == "check-first" and jump_safe(config.json_schema)
            llama.last_sampler, llama.jump_forward = None, jump
            llama.draft_model = ForcedDraft(llama) if jump else None
            try:
                response = llama.create_chat_completion(**kwargs)
            finally:
                reading, self._reading = self._reading, None
                llama.draft_model, llama.jump_forward = None, False
                self.last_jumped = getattr(llama.last_sampler, "jumped", 0)
            after = list(llama._input_ids)
            self._snapshot(llama)
            usage = response.get("usage") or {}
            prompt_tokens = usage.get("prompt_tokens", 0)
            # one entry for each generated token llama.cpp evaluated (the last ones read: a step
            # before generation began, if any, was the prompt's)
            generated = max(0, len(after) - prompt_tokens)
            logprobs = reading.read[max(0, len(reading.read) - generated):] if reading is not None else None
        latency = time.perf_counter() - start
        choice = response["choices"][0]
        # llama.cpp keeps the longest common prefix; a system message read by _prime was read by this call
        reused = max(0, _common_prefix(before, after[:prompt_tokens]) - primed)
        return Completion(text=choice["message"].get("content") or "",
                          usage=Usage(prompt_tokens=prompt_tokens,
                                      completion_tokens=usage.get("completion_tokens", 0),
                                      cached_prompt_tokens=reused),
                          logprobs=logprobs, latency_s=latency,
                          finish_reason=choice.get("finish_reason"), backend="llamacpp",
                          model=self.model)

    def _check_fits(self, llama: Any, prompt_tokens: int) -> None:
        """A prompt that leaves no room in the context window fails this call with a reason a user
        can act on (llama.cpp itself fails deep in its decoder, or with a bare ValueError). A prompt
        that fits but leaves less room than ``max_tokens`` is left to llama.cpp, which shortens the
        generation to what fits."""
        if prompt_tokens >= self.n_ctx:
            trained = llama._model.n_ctx_train()
            raise BackendError(f"{self.name}: the prompt has {prompt_tokens} tokens and the judge's context window "
                               f"holds {self.n_ctx}: raise it with --judge-opt n_ctx=N (this model takes up to "
                               f"{trained}) or shorten the texts")

    def _chat_prompt(self, llama: Any, messages: list[Message]) -> str:
        """The chat-templated prompt the model would generate its answer after."""
        if self._formatter is None:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            template = llama.metadata.get("tokenizer.chat_template")
            if not template:
                raise ConfigError(f"{self.name}: the model has no chat template; label calls need one")
            eos, bos = llama.token_eos(), llama.token_bos()
            self._formatter = Jinja2ChatFormatter(
                template=template, eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
                bos_token=llama._model.token_get_text(bos) if bos != -1 else "")
        response = self._formatter(messages=[{"role": m.role, "content": m.content} for m in messages])
        return str(response.prompt)

    def label_token_ids(self, llama: Any, labels: list[str]) -> dict[str, set[int]]:
        """The first token of each label as the answer's first word could be written (``yes``,
        ``Yes``, `` yes``, ``YES``). Labels are told apart by that token."""
        ids: dict[str, set[int]] = {}
        for label in labels:
            found: set[int] = set()
            for variant in {label, label.capitalize(), label.upper(), " " + label, " " + label.capitalize()}:
                tokens = llama.tokenize(variant.encode("utf-8"), add_bos=False, special=False)
                # a tokenizer that splits " 0" into " " + "0" gives a bare space first: not a label's token
                if tokens and bytes(llama.detokenize(tokens[:1])).strip():
                    found.add(tokens[0])
            ids[label] = found
        for a in labels:
            for b in labels:
                if a < b and ids[a] & ids[b]:
                    raise ConfigError(f"labels {a!r} and {b!r} begin with the same token; label calls tell "
                                      "labels apart by their first token")
        return ids

    def _label_probs_sync(self, messages: list[Message], labels: list[str],
                          cancel: threading.Event | None = None) -> Completion:
        """One forward pass over the prompt's new tokens (the longest prefix shared with the
        previous call stays in the KV cache); the next token's distribution over the labels."""
        import numpy as np

        llama = self.load()
        start = time.perf_counter()
        with self._lock:
            self._cancel = cancel
            tokens = llama.tokenize(self._chat_prompt(llama, messages).encode("utf-8"), add_bos=False,
                                    special=True)
            self._check_fits(llama, len(tokens))
            self._restore_best(llama, tokens)
            primed = self._prime(llama, messages, tokens)
            common = _common_prefix(list(llama._input_ids[: llama.n_tokens]), tokens)
            common = min(common, len(tokens) - 1)  # at least one token is evaluated: its logits are read
            llama.n_tokens = common
            llama.eval(tokens[common:])
            llama._requires_eval = True  # the next generate() must not take these logits for its own
            self._snapshot(llama)
            logits = _last_token_logits(llama)
            ids = self.label_token_ids(llama, labels)
        peak = logits.max()
        weights = np.exp(logits - peak)
        total = float(weights.sum())
        mass = {label: float(sum(weights[t] for t in found)) / total for label, found in ids.items()}
        covered = sum(mass.values())
        probs = {label: (m / covered if covered > 0 else 1.0 / len(labels)) for label, m in mass.items()}
        best = max(probs, key=lambda k: probs[k])
        return Completion(text=best, label_probs=probs,
                          usage=Usage(prompt_tokens=len(tokens), completion_tokens=0,
                                      cached_prompt_tokens=common - primed),
                          latency_s=time.perf_counter() - start, finish_reason="label", backend="llamacpp",
                          model=self.model)

    async def generate(self, messages: list[Message], config: GenerateConfig) -> Completion:
        cancel = threading.Event()
        try:
            if self._child is not None:
                request = (("label", messages, list(config.labels)) if config.labels
                           else ("generate", messages, config))
                completion: Completion = await asyncio.to_thread(self._child.call, request, cancel)
                return completion
            if config.labels:
                return await asyncio.to_thread(self._label_probs_sync, messages, list(config.labels), cancel)
            return await asyncio.to_thread(self._generate_sync, messages, config, cancel)
        except asyncio.CancelledError:
            # The run's timeout, Ctrl-C or SIGTERM: the worker thread stops at its next token
            # (instead of finishing the generation and keeping the process alive); its output is
            # never stored, so the call counts as not made.
            cancel.set()
            raise

    def check(self) -> None:
        """Load the model where the calls will run (the child process by default); raises
        :class:`~assay.core.errors.JudgeCrashed` if loading it kills that process."""
        if self._child is not None:
            self._child.call(("load",))
        else:
            self.load()

    async def aclose(self) -> None:
        if self._child is not None:
            await asyncio.to_thread(self._child.close)
        with self._lock:
            self._states.clear()
            if self._llama is not None:
                self._llama.close()
                self._llama = None


MIN_STATE_GAIN = 32
"""A snapshot is restored only when it saves at least this many tokens over the KV cache."""
STATE_FAMILY = 64
"""Prompts sharing at least this many first tokens are one family: one snapshot each."""


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _get_state(llama: Any) -> Any:
    """The KV state of sequence 0 (a ctypes byte array), or None if llama.cpp gives none."""
    import llama_cpp

    size = llama_cpp.llama_state_seq_get_size(llama._ctx.ctx, 0)
    state = (ctypes.c_uint8 * size)()
    if llama_cpp.llama_state_seq_get_data(llama._ctx.ctx, state, size, 0) != size:
        return None
    return state


def _set_state(llama: Any, ids: list[int], state: Any) -> bool:
    """Replace the KV cache with a state kept after ``ids``; False (and an empty cache, so the call
    reads its whole prompt) when llama.cpp does not take it."""
    import llama_cpp

    llama._ctx.kv_cache_seq_rm(-1, 0, -1)
    if llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, state, len(state), 0) != len(state):
        llama.n_tokens = 0
        llama._ctx.kv_cache_seq_rm(-1, 0, -1)
        return False
    llama.input_ids[: len(ids)] = ids
    llama.n_tokens = len(ids)
    llama._requires_eval = True  # the restored logits are not this call's
    return True


def _last_token_logits(llama: Any) -> Any:
    """The next-token logits after the last evaluated token, as float64.

    ``llama_get_logits`` points at the first row of the last batch's outputs: with ``logits_all``
    off that batch has one output (its last token), with ``logits_all`` on it has one row per token
    and row 0 is the batch's *first* token. ``llama_get_logits_ith(ctx, -1)`` is the last output
    whichever way the context was made, so a label's probability does not depend on the option."""
    import llama_cpp
    import numpy as np

    pointer = llama_cpp.llama_get_logits_ith(llama._ctx.ctx, -1)
    if not pointer:
        raise BackendError("llama.cpp returned no logits for the last prompt token")
    return np.ctypeslib.as_array(pointer, shape=(llama.n_vocab(),)).astype(np.float64)


class _LogprobReader:
    """Each generated token's logprob and its ``top`` alternatives, read while llama.cpp
    generates: after every step the next-token logits (the step's last output, the only row
    llama.cpp computes without ``logits_all``) wait in ``pending``; the next step's token is the
    one chosen from them. Covers the generated tokens the model evaluated, i.e. all but the last
    one (a closing brace or end of the JSON, never a verdict's value). Raw logits, before the
    grammar, as llama-cpp-python reports them; vectorised with numpy (llama-cpp-python's own
    ``logprobs`` sorts the whole vocabulary in Python for every token, and needs every prompt
    token's logits: ``logits_all``, measured slower at reading prompts)."""

    def __init__(self, top: int) -> None:
        self.top = top
        self.pending: Any = None
        self.read: list[TokenLogprob] = []

    def take(self, llama: Any, token: int) -> None:
        row, self.pending = self.pending, None
        logprob, ranked = token_logprob(row, token, self.top)

        def text(t: int) -> str:
            return bytes(llama.detokenize([t])).decode("utf-8", errors="ignore")

        alternatives = {text(t): value for t, value in ranked}
        self.read.append(TokenLogprob(token=text(token), logprob=logprob, top=alternatives))


def token_logprob(row: Any, token: int, top: int) -> tuple[float, list[tuple[int, float]]]:
    """``token``'s logprob under one row of logits, and the ``top`` most likely tokens with theirs
    (log-softmax of the raw logits; the alternatives by ``argpartition``, most likely first)."""
    import numpy as np

    row = np.asarray(row, dtype=np.float64)
    norm = row.max() + np.log(np.exp(row - row.max()).sum())
    best = np.argpartition(-row, top - 1)[:top]
    return float(row[token] - norm), [(int(t), float(row[t] - norm)) for t in sorted(best, key=lambda t: -row[t])]


def die_with_parent(interval_s: float = 0.5) -> None:
    """The child ends itself when its parent dies, however the parent dies (kill -9, a SIGTERM
    without cleanup): a model busy in a long forward pass would otherwise read the closed pipe only
    when the pass ends, and run on, orphaned, for minutes. A daemon thread watches the parent's pid
    (a forward pass runs in llama.cpp with the GIL released, so the thread keeps its turn).
    Not Linux's PR_SET_PDEATHSIG: that fires when the *thread* that started the child ends, and the
    child is started from whichever thread first calls the judge."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(interval_s)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=watch, name="assay-parent-watch", daemon=True).start()


def _child_main(conn: Any, cancel: Any, options: dict[str, Any]) -> None:
    """The child's loop: build the in-process backend, answer calls until told to stop or the
    parent goes away (EOF on the pipe)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    die_with_parent()
    backend = LlamaCppBackend(**options, process="inline")
    # Fault injection for assay's own tests (a CPU that refuses an instruction cannot be summoned on
    # demand): ASSAY_EMBEDDED_FAULT=SIGILL makes the child die by that signal on its first call.
    fault = os.environ.get("ASSAY_EMBEDDED_FAULT")
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        kind = request[0]
        if kind == "close":
            return
        if fault and kind != "load":
            os.kill(os.getpid(), getattr(signal, fault))
        try:
            if kind == "load":
                backend.load()
                answer: Any = ("ok", None)
            elif kind == "label":
                answer = ("ok", backend._label_probs_sync(request[1], request[2], cancel))
            else:
                answer = ("ok", backend._generate_sync(request[1], request[2], cancel))
        except CallCancelled:
            answer = ("cancelled", None)
        except AssayError as exc:
            answer = ("error", type(exc).__name__, str(exc))
        except Exception as exc:  # a llama.cpp failure we did not foresee: this call failed, typed
            answer = ("error", "BackendError", f"{type(exc).__name__}: {exc}")
        try:
            conn.send(answer)
        except (BrokenPipeError, OSError):
            return


def factory(model: str, options: dict[str, Any]) -> JudgeBackend:
    """``options`` arrive parsed against :class:`~assay.judge.backends._options.LlamaCppOptions`."""
    return LlamaCppBackend(model or "default", **options)


NAMED_MODELS = ("default", "smollm2")
"""The models ``llamacpp/NAME`` knows by name; any other NAME is a path to a GGUF file."""


def check_model_name(model: str, explicit_path: str | None = None) -> Path:
    """The GGUF file ``llamacpp/MODEL`` names when MODEL is not one of :data:`NAMED_MODELS`; one
    line (ConfigError) when there is none, with the named model it most resembles. Nothing is
    loaded: ``--dry-run`` checks a judge name with this as the run does."""
    import difflib

    path = Path(explicit_path or model).expanduser()
    if path.is_file():
        return path
    close = difflib.get_close_matches(model, NAMED_MODELS, n=1, cutoff=0.6)
    hint = (f" (did you mean llamacpp/{close[0]}?)" if close else
            f"; llamacpp/ takes {' or '.join(NAMED_MODELS)} or the path of a .gguf file")
    raise ConfigError(f"llamacpp/{model}: no GGUF file at {path}{hint}")


"""``python -m assay.judge.serve``: llama-cpp-python's OpenAI-compatible server with the embedded
judge's fast paths, for judging over HTTP (one or several endpoints).

It is the stock ``llama_cpp.server`` (same options, same API) whose model class is replaced
before it starts, with two changes a judge notices:

* **Check-first grammar sampling** (:mod:`assay.judge.backends._fastgrammar`): the grammar of a JSON
  schema (``response_format={"type": "json_object", "schema": ...}``) checks the token the
  sampler chose instead of filtering the whole vocabulary at every step; greedy output is the
  same token for token.
* **Logprobs read as the tokens are generated, with numpy**, for the generated tokens only. The
  stock server needs ``logits_all`` (llama.cpp then computes and copies the logits of every prompt
  token: prompts read at 0.76 times the speed, measured), turns them into log-probabilities and sorts the
  151,936-entry vocabulary in Python for every generated token (≈ 0.2 s a token on this CPU),
  which made soft verdicts through a server several times slower than in-process. Here each
  step's last output is kept until the next token is chosen: same values (log-softmax of the
  same logits), top alternatives by ``argpartition``. ``--logits_all true`` still says whether a
  request may ask for logprobs.

(The server's response model keeps only the stock usage fields, so prefix reuse through a server
is not reported; in-process runs report it.)
Streaming and ``echo`` requests take the stock path. Usage is that of ``llama_cpp.server``, e.g.
``python -m assay.judge.serve --model PATH --host 127.0.0.1 --port 8080 --logits_all true``.
``--n_threads`` and ``--n_threads_batch`` default to the CPUs the process may use, as the embedded
judge's do (the stock server writes with half the cores).
Note the server's own default ``repeat_penalty`` is 1.1 (not an OpenAI parameter); assay's
openai backend sends ``extra_body={"repeat_penalty": 1.0}`` when told to (judge option
``extra_body``), so that a list of verdicts is not pushed away from repeating a label.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class _Reading:
    """The logprobs of one completion, read while it is generated: after every step llama.cpp's
    last output (the next-token logits, the only row it computes without ``logits_all``) waits in
    ``pending``; the next step's token is the one chosen from it."""

    def __init__(self, top: int) -> None:
        self.top = top
        self.pending: Any = None
        self.taken: list[tuple[int, float, list[tuple[int, float]]]] = []  # token, logprob, top alternatives

    def take(self, token: int) -> None:
        from assay.judge.backends._llamacpp import token_logprob

        row, self.pending = self.pending, None
        self.taken.append((token, *token_logprob(row, token, self.top)))


def _fast_logprobs(llama: Any, ids: list[int], prompt_tokens: int, text: str, reading: _Reading) -> dict[str, Any]:
    """The completion-style logprobs record (``tokens``, ``text_offset``, ``token_logprobs``,
    ``top_logprobs``) of the generated tokens llama.cpp evaluated, plus the last one when it is
    one token of the remaining text (a completion cut by ``max_tokens``, or a one-token answer)."""
    generated = list(ids[prompt_tokens:])
    taken = list(reading.taken[max(0, len(reading.taken) - len(generated)):])  # the generated tokens' steps: the last
    seen = llama.detokenize(generated).decode("utf-8", errors="ignore") if generated else ""
    rest = text[len(seen):] if text.startswith(seen) else ""
    if rest and reading.pending is not None:
        tail = llama.tokenize(rest.encode("utf-8"), add_bos=False, special=False)
        if len(tail) == 1:
            reading.take(tail[0])
            taken.append(reading.taken[-1])
            generated.append(tail[0])

    def piece(token: int, before: list[int]) -> str:
        return llama.detokenize([token], prev_tokens=before).decode("utf-8", errors="ignore")

    tokens, offsets, values, tops = [], [], [], []
    offset = 0
    for k, (token, logprob, ranked) in enumerate(taken):
        before = generated[:k]
        token_text = piece(token, before)
        alternatives = {piece(t, before): value for t, value in ranked}
        alternatives[token_text] = logprob
        tokens.append(token_text)
        offsets.append(offset)
        values.append(logprob)
        tops.append(alternatives)
        offset += len(token_text)
    return {"tokens": tokens, "text_offset": offsets, "token_logprobs": values, "top_logprobs": tops}


def fast_llama_class() -> type:
    """The check-first ``Llama`` subclass with numpy logprobs read as it generates. The server's
    ``--logits_all true`` still says whether logprobs may be asked for, but the model is loaded
    without llama.cpp's own ``logits_all``: that computes and copies the logits of every prompt
    token (prompts read at 0.76 times the speed, measured), where a generated token's logprobs need only
    the step's last output. (Streaming and ``echo`` requests with logprobs are refused then: they
    read every row; the stock ``llama_cpp.server`` serves them.)"""
    from assay.judge.backends._fastgrammar import check_first_llama_class

    base: Any = check_first_llama_class()

    class ServedLlama(base):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            if kwargs.get("draft_model") is not None:  # its steps evaluate several tokens: one reading each is wrong
                raise ValueError("assay.judge.serve reads logprobs one step at a time and takes no --draft_model; "
                                 "serve a draft model with python -m llama_cpp.server")
            self._logprobs_allowed = bool(kwargs.get("logits_all"))
            kwargs["logits_all"] = False
            self._reading: _Reading | None = None
            super().__init__(*args, **kwargs)

        def eval(self, tokens: Any) -> None:
            reading = self._reading
            if reading is not None and reading.pending is not None and len(tokens):
                reading.take(int(tokens[0]))
            super().eval(tokens)
            if reading is not None:
                from assay.judge.backends._llamacpp import _last_token_logits

                reading.pending = _last_token_logits(self)

        def _create_completion(self, prompt: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
            top = kwargs.get("logprobs")
            if kwargs.get("stream") or kwargs.get("echo"):
                yield from super()._create_completion(prompt, *args, **kwargs)
                return
            if top is not None and not self._logprobs_allowed:
                raise ValueError("logprobs is not supported for models created with logits_all=False")
            kwargs["logprobs"] = None
            self._reading = _Reading(max(1, int(top))) if top is not None else None
            try:
                for chunk in super()._create_completion(prompt, *args, **kwargs):
                    if self._reading is not None:
                        prompt_tokens = int((chunk.get("usage") or {}).get("prompt_tokens", 0))
                        choice = chunk["choices"][0]
                        choice["logprobs"] = _fast_logprobs(self, list(self._input_ids), prompt_tokens,
                                                            choice.get("text") or "", self._reading)
                    yield chunk
            finally:
                self._reading = None

    return ServedLlama


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running(model: str | Path, log: Path, *, module: str = "assay.judge.serve", alias: str = "judge",
            threads: int | None = None, n_ctx: int = 4096, logits_all: bool = True, start_timeout_s: float = 180.0,
            env: dict[str, str] | None = None) -> Iterator[str]:
    """A server (``assay.judge.serve`` or the stock ``llama_cpp.server``) on a free port of 127.0.0.1,
    its output in ``log``; yields its base URL (``http://127.0.0.1:PORT/v1``) and stops it after.
    ``env``: variables added to the server's environment; ``threads``: default the CPUs this process may
    run on (:func:`assay.judge.cpu_build.usable_cpus`)."""
    import httpx

    from assay.judge.cpu_build import usable_cpus

    port = free_port()
    threads = threads or usable_cpus()
    handle = log.open("w")
    proc = subprocess.Popen([sys.executable, "-m", module, "--model", str(model), "--host", "127.0.0.1",
                             "--port", str(port), "--n_ctx", str(n_ctx),
                             "--n_threads", str(threads), "--n_threads_batch", str(threads),
                             "--logits_all", "true" if logits_all else "false", "--model_alias", alias],
                            stdout=handle, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.time() + start_timeout_s
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{module} exited: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline:
                raise RuntimeError(f"{module} did not start in {start_timeout_s:.0f} s: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        handle.close()


def main() -> None:
    import llama_cpp
    from llama_cpp.server.__main__ import main as serve

    if any(arg == "--draft_model" or arg.startswith("--draft_model=") for arg in sys.argv[1:]):
        sys.stderr.write("error: assay.judge.serve reads logprobs one step at a time and takes no --draft_model; "
                         "serve a draft model with python -m llama_cpp.server\n")
        raise SystemExit(2)
    sys.argv[1:] = thread_defaults(sys.argv[1:])
    llama_cpp.Llama = fast_llama_class()  # type: ignore[misc, assignment]  # looked up at load time
    serve()


def thread_defaults(args: list[str]) -> list[str]:
    """The stock server's arguments with the threads assay's embedded judge uses where they are not
    given: ``--n_threads`` and ``--n_threads_batch`` = the CPUs this process may use. The stock
    defaults are half the machine's cores for writing and all of them for reading, whatever ``taskset``
    or a cpuset allows: on 2 cores one thread wrote, and the 1.5B judge wrote 5.7-5.8 tokens/s through
    this server against 8.6-10.0 with two (48 tokens, two rounds each, a 2-core Xeon)."""
    from assay.judge.cpu_build import usable_cpus

    given = {arg.split("=", 1)[0] for arg in args if arg.startswith("--")}
    if "--config_file" in given or os.environ.get("CONFIG_FILE"):
        return args  # the stock server then reads every setting from that file
    environment = {key.lower() for key in os.environ}  # the stock settings also read N_THREADS, ...
    added = [f"--{name}={usable_cpus()}" for name in ("n_threads", "n_threads_batch")
             if f"--{name}" not in given and name not in environment]
    return [*added, *args]  # first: a value the user gives, even as an abbreviation (--n_threads_b 3), wins


if __name__ == "__main__":
    main()

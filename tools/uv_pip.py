"""Runs `uv pip ARGS...` with the package sources pip is configured with on this machine.

`make setup` installs the test environment with uv: the same packages pip resolves (highest version
across every index, as pip does), in 46 s instead of pip's 103 s on a 2-core machine, 36 s once uv's
cache is warm. uv does not read pip's configuration, so this passes on what `pip config list`
reports (files and PIP_* variables, a variable over the [install] section over [global]):
index-url, extra-index-url, find-links, no-index, constraint, trusted-host, pre, only-binary,
no-binary, cert, client-cert, proxy and timeout. Other pip settings are not passed on. Standard
library only: it runs before assay is installed.

Usage: .venv/bin/python tools/uv_pip.py UV COMMAND [uv pip arguments...] (into that Python's environment)"""

from __future__ import annotations

import ast
import os
import subprocess
import sys

# pip's options that hold a list, and uv's flag for each value
LISTS = {"extra-index-url": "--extra-index-url", "find-links": "--find-links", "constraint": "--constraint",
         "trusted-host": "--allow-insecure-host", "only-binary": "--only-binary", "no-binary": "--no-binary"}
TRUE = ("1", "true", "yes", "on", "y", "t")


def pip_config() -> dict[str, str]:
    """pip's effective settings by option name: a PIP_* variable over the [install] section over
    [global] (pip lists each file's values already merged)."""
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                         check=True).stdout
    return parse(out)


def parse(out: str) -> dict[str, str]:
    """The settings in `pip config list`'s output (lines ``section.option='value'``)."""
    rank = {"global": 0, "install": 1, ":env:": 2}
    found: dict[str, tuple[int, str]] = {}
    for line in out.splitlines():
        key, sep, value = line.partition("=")
        section, _, option = key.rpartition(".")
        if not sep or section not in rank:
            continue
        option = {"default-timeout": "timeout"}.get(option, option)
        if option not in found or rank[section] >= found[option][0]:
            found[option] = (rank[section], _unrepr(value.strip()))
    return {option: value for option, (_, value) in found.items()}


def _unrepr(value: str) -> str:
    """pip prints each value as Python's repr of a string: a value written over several lines in a
    config file comes as one line with ``\\n`` in it."""
    try:
        parsed = ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        parsed = None
    return parsed if isinstance(parsed, str) else value.strip("'\"")


def uv_arguments(config: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """uv's flags and environment for pip's settings."""
    args: list[str] = ["--index-strategy", "unsafe-best-match"]  # pip takes the best version of every index
    env: dict[str, str] = {}
    if config.get("index-url"):
        args += ["--index-url", config["index-url"]]
    if config.get("no-index", "").lower() in TRUE:
        args.append("--no-index")
    if config.get("pre", "").lower() in TRUE:
        args += ["--prerelease", "allow"]
    for option, flag in LISTS.items():
        for value in config.get(option, "").split():
            args += [flag, value]
    if config.get("cert"):
        env["SSL_CERT_FILE"] = config["cert"]
    if config.get("client-cert"):
        env["SSL_CLIENT_CERT"] = config["client-cert"]
    if config.get("proxy"):
        env["HTTP_PROXY"] = env["HTTPS_PROXY"] = config["proxy"]
    if config.get("timeout"):
        env["UV_HTTP_TIMEOUT"] = config["timeout"]
    return args, env


def main() -> None:
    uv, command, *rest = sys.argv[1:]
    args, env = uv_arguments(pip_config())
    # uv's options go after the subcommand (`uv pip install --find-links ...`)
    # into the environment of the Python that runs this script
    os.execve(uv, [uv, "pip", command, "--python", sys.executable, *args, *rest], {**os.environ, **env})


if __name__ == "__main__":
    main()

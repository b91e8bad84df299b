"""The `assay` command line (Typer). Commands are thin over the library."""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.markup import escape

from assay._version import __version__
from assay.cli._click import (
    BadParameter,
    ClickException,
    NoArgsIsHelpError,
    UsageError,
    convert_option,
    is_group,
    is_option,
)
from assay.cli.kit import COMPARE, EVALUATE, INSPECT, KIT, PANELS, RUBRICS, TOOLS, err_console
from assay.core.errors import AssayError, BudgetExhausted, ConfigError, JudgeCrashed, JudgeUnreachable
from assay.store import OPENED_STORES

__all__ = ["COMPARE", "EVALUATE", "EXIT_CODES", "INSPECT", "PANELS", "RUBRICS", "TOOLS", "app", "build_app",
           "check_config", "load_config", "main"]

EXIT_CODES = ("Exit status: 0 ok · 1 a gate or check failed · 2 bad input, option or configuration (one line on "
              "stderr names the file, line and field) · 3 the token budget stopped the run (resume with a larger "
              "--budget) · 4 the judge is unreachable or every judge call failed · 130 interrupted (Ctrl-C) · "
              "143 terminated (SIGTERM) · 141 standard output closed early (assay export -o - | head). "
              "An interrupted run is marked so in its store; the same command continues it. "
              "Add --debug (before the command) to see a traceback.")

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BUDGET, EXIT_JUDGE, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 3, 4, 130, 143

def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"assay {__version__}")
        raise typer.Exit(0)


def _root(version: bool = typer.Option(False, "--version", "-V", is_eager=True, callback=_print_version,
                                       help="Print assay's version and exit."),
          debug: bool = typer.Option(False, "--debug", help="Show a traceback when the command fails (give it "
                                                            "before the command: assay --debug eval ...).")) -> None:
    """Decomposed, auditable LLM judges for LLM and RAG answers. (``--debug`` is read by :func:`main`
    before the command line is parsed; it is declared here so that ``assay --help`` lists it.)"""


def _new_root() -> typer.Typer:
    root = typer.Typer(name="assay", help="Decomposed, auditable LLM judges for LLM and RAG answers.",
                       epilog=EXIT_CODES, no_args_is_help=True, pretty_exceptions_enable=False,
                       rich_markup_mode="markdown", context_settings={"help_option_names": ["-h", "--help"]})
    root.callback()(_root)
    return root


# The root of the command tree. Its commands are added by build_app(), when assay.cli.app is first
# read: importing assay.cli (or a module under it) builds nothing. A start of the `assay` command
# builds only the part of the tree it runs (_tree_for).
_app = _new_root()


def version() -> None:
    """Print assay's version."""
    typer.echo(__version__)


BUILTIN_COMMANDS = ("eval", "demo", "injection", "report", "export", "ui", "meta", "align", "model", "doctor",
                    "judges", "version")
"""assay's own top-level commands; the methods' and plug-ins' commands come from the registry."""


def _add_builtin(root: typer.Typer, name: str, eval_group: typer.Typer | None = None) -> None:
    """Add the built-in command ``name`` to ``root`` (``eval`` as ``eval_group``: its commands are
    added by the caller)."""
    import importlib

    if name == "eval":
        from assay.cli import eval as eval_cli

        root.add_typer(eval_group if eval_group is not None else eval_cli.app, name="eval", rich_help_panel=EVALUATE)
    elif name == "model":
        from assay.cli import model

        root.add_typer(model.app, name="model", rich_help_panel=TOOLS)
    elif name == "version":
        root.command("version", rich_help_panel=TOOLS)(version)
    else:
        panel = {"demo": EVALUATE, "injection": EVALUATE, "report": INSPECT, "export": INSPECT, "ui": INSPECT,
                 "meta": COMPARE, "align": COMPARE, "doctor": TOOLS, "judges": TOOLS}[name]
        module = importlib.import_module(f"assay.cli.{name}")
        root.command(name, rich_help_panel=panel)(getattr(module, name))


_built = False


def build_app() -> typer.Typer:
    """The whole ``assay`` command tree, built once, on first use: the built-in commands, then
    ``assay eval NAME`` for every method, then every ``command`` entry of the registry — each
    method's ``register_commands(app, kit)`` hook and the ``assay.commands`` plug-ins' — built-in
    methods and plug-ins alike (the way simonw/llm plug-ins add commands). Nothing here names a
    method."""
    global _built
    if _built:
        return _app
    _built = True
    from assay.cli._help import install

    install()  # the compact help layout (one line per option, expert options behind --help-all)
    from assay.cli import eval
    from assay.core.registry import commands

    for name in BUILTIN_COMMANDS:
        _add_builtin(_app, name)
    eval.register_eval_commands(eval.app)
    for register in commands().values():
        register(_app, KIT)
    return _app


HELP_FLAGS = ("-h", "--help", "--help-all")


def _tree_for(args: list[str]) -> typer.Typer:
    """The command tree one start of ``assay`` needs to run ``args``: for ``--version``, none; for a
    built-in command other than ``eval``, that command alone; for ``assay eval NAME``, the one
    method's command; for a method's or plug-in's own command, that one; anything else (the root's
    help, ``assay eval`` alone, a name that is not a command) the whole tree, so that help and
    errors list every command. Starts that build one command instead of every method's took ~0.15 s
    less. The help layout is installed only where a help may be shown."""
    if args and args[0] in ("--version", "-V"):
        return _new_root()
    words = [a for a in args if not a.startswith("-")]
    if not words or words[0] != args[0]:
        return build_app()
    root = _new_root()
    if words[0] not in BUILTIN_COMMANDS:
        from assay.core.registry import commands

        for register in commands().values():
            register(root, KIT)
        own = [c for c in root.registered_commands if _command_name(c) == words[0]]
        groups = [g for g in root.registered_groups if g.name == words[0]]
        if not own and not groups:
            return build_app()
        root.registered_commands, root.registered_groups = own, groups
        return root
    if words[0] != "eval":
        _add_builtin(root, words[0])
        return root
    from assay.cli import eval as eval_cli

    group = typer.Typer(help=eval_cli.app.info.help, no_args_is_help=True)
    if len(words) < 2 or words[1] != args[1] or not eval_cli.register_eval_commands(group, only=words[1]):
        return build_app()
    _add_builtin(root, "eval", group)
    return root


def _may_show_help(command: Any, args: list[str]) -> bool:
    """Whether running ``args`` may print a help: a help flag, or the arguments end at a command or
    group name (a group without its command, or a command with ``no_args_is_help``, shows its help;
    click makes that text when it raises the error, before main() sees it)."""
    if any(a in HELP_FLAGS for a in args):
        return True
    for arg in args:
        if not is_group(command) or arg not in command.commands:
            return False
        command = command.commands[arg]
    return True


def _command_name(info: Any) -> str:
    return str(info.name or typer.main.get_command_name(info.callback.__name__))


def __getattr__(name: str) -> Any:
    """``assay.cli.app`` is the built command tree (:func:`build_app`)."""
    if name == "app":
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_config(path: Path | None = None) -> dict[str, Any]:
    """Option defaults from TOML: ``ASSAY_CONFIG`` or ``./assay.toml``.

    Tables follow the command path, keys are the options' long flags with underscores::

        [eval.dece]
        judge = "openai/gpt-4o-mini"
        domain = "legal"
        concurrency = 16

    Precedence: command-line flag > environment variable > config file > built-in default.
    A table or key that names no command or option, or a value of the wrong type, is a
    ConfigError naming the file and the key (a typo must not silently leave a default). The
    result is keyed by the commands' parameter names (click's ``default_map``).
    """
    if path is None:
        env = os.environ.get("ASSAY_CONFIG")
        path = Path(env) if env else Path("assay.toml")
        if not env and not path.is_file():
            return {}
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    from assay.core._load import load_toml

    config = load_toml(path)  # one line naming the file and line: unreadable, not UTF-8, not TOML
    return check_config(config, str(path))


OLD_FLAGS = frozenset({"--out", "--resume"})
"""Flags kept for old scripts (``--out``: the old name of ``--store``): read in assay.toml, never offered."""


def _key(param: Any) -> str:
    """An option's key in assay.toml: its long flag with underscores (``--max-reason-chars`` is
    ``max_reason_chars``), as users know it from the help."""
    flag = next((o for o in param.opts if o.startswith("--")), None)
    return flag[2:].replace("-", "_") if flag else str(param.name)


def config_keys(command: Any) -> tuple[dict[str, Any], list[str]]:
    """The keys a command's table in assay.toml accepts, each with its option, and those shown
    to users. A key is the long flag with underscores; the parameter's own name and an old
    flag's spelling are read too. ``--help-all`` and the like take no value and are no keys."""
    from assay.cli.kit import ALIAS_PREFIX

    options = [p for p in command.params if is_option(p) and p.expose_value and not p.is_eager]
    current = [p for p in options if not str(p.name).startswith(ALIAS_PREFIX)]
    old = [p for p in options if str(p.name).startswith(ALIAS_PREFIX)]
    keys: dict[str, Any] = {}
    for key, param in [*((_key(p), p) for p in current), *((str(p.name), p) for p in current),
                       *((_key(p), p) for p in old)]:
        keys.setdefault(key, param)
    shown = sorted(_key(p) for p in current if not OLD_FLAGS.intersection(p.opts))
    return keys, shown


def _toml(value: Any) -> str:
    """A value as written in TOML (``"2"``, ``true``, ``[1, "x"]``)."""
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value) if not isinstance(value, dict) else "{...}"


def _wrong_type(param: Any, value: Any, key: str) -> str | None:
    """Why ``value`` (as TOML gives it) cannot be this option's value, or None. TOML has types:
    a number in quotes, 1 for true or text for a number is refused, never converted."""
    import typing

    kind = param.type_descriptor.annotation
    if param.is_flag:
        return None if isinstance(value, bool) else "takes true or false"
    origin = typing.get_origin(kind)
    if origin in (list, tuple):
        args = typing.get_args(kind)
        values = value if isinstance(value, list) else [value]
        if origin is tuple and (not isinstance(value, list) or len(value) != len(args)):
            return f"takes a list of {len(args)} values"
        for inner, one in zip(args if origin is tuple else [args[0]] * len(values), values, strict=True):
            why = _wrong_element(inner, one, key, listed=True)
            if why:
                return why
        return None
    return _wrong_element(kind, value, key)


def _wrong_element(kind: Any, value: Any, key: str, listed: bool = False) -> str | None:
    if isinstance(value, bool):
        # true was read as 1, or as the text "True"
        return "a true/false value for an option that takes a value; give the value itself"
    if kind is int or kind is float:
        what = "a whole number" if kind is int else "a number"
        if isinstance(value, int) or (kind is float and isinstance(value, float)):
            return None
        if isinstance(value, str):
            try:
                number = int(value) if kind is int else float(value)
            except ValueError:
                return f"takes {what}"
            example = "" if listed else f": {key} = {value.strip()}"
            return f"takes {what}, written without quotes{example}" if number == number else f"takes {what}"
        return f"takes {what}"
    if isinstance(value, str):
        return None
    example = "" if listed or not isinstance(value, int | float) else f": {key} = {_toml(str(value))}"
    return f"takes text, written in quotes{example}"


def check_config(config: dict[str, Any], source: str) -> dict[str, Any]:
    """Every table must be a command path and every key an option of that command, and each
    value must be of the option's type (TOML's: a number in quotes is text) and convert to its
    range, as on the command line. Returns the tables keyed by parameter names (a default_map)."""
    import difflib

    root = typer.main.get_command(build_app())
    _harden(root)

    def did_you_mean(word: str, names: list[str]) -> str:
        close = difflib.get_close_matches(word, names, 1)
        return f" (did you mean '{close[0]}'?)" if close else ""

    def walk(command: Any, table: dict[str, Any], where: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if is_group(command):
            for key, value in table.items():
                sub = command.commands.get(key)
                if sub is None:
                    here = sorted(command.commands)
                    raise ConfigError(f"{source}: [{'.'.join([*where, key])}] is not an assay command"
                                      f"{did_you_mean(key, here)}; commands here: {', '.join(here)}")
                if not isinstance(value, dict):
                    raise ConfigError(f"{source}: '{'.'.join([*where, key])}' must be a table of options")
                out[key] = walk(sub, value, [*where, key])
            return out
        options, shown = config_keys(command)
        given: dict[str, str] = {}
        for key, value in table.items():
            name = ".".join([*where, key])
            if key not in options:
                raise ConfigError(f"{source}: [{'.'.join(where)}] has no option '{key}'{did_you_mean(key, shown)}; "
                                  f"its options: {', '.join(shown)}")
            param = options[key]
            if param.name in given:
                raise ConfigError(f"{source}: [{'.'.join(where)}] sets '{_key(param)}' twice (as '{given[param.name]}' "
                                  f"and '{key}'); keep one")
            given[param.name] = key
            if isinstance(value, dict) or (isinstance(value, list) and not param.multiple
                                           and _typing_origin(param) is not tuple):
                raise ConfigError(f"{source}: '{name}' must be a single value, got "
                                  f"{'a table' if isinstance(value, dict) else 'a list'}")
            why = _wrong_type(param, value, key)
            if why:
                raise ConfigError(f"{source}: '{name}' = {_toml(value)}: {why}")
            if param.multiple and not isinstance(value, list):
                value = [value]  # judge_opt = "n_ctx=4096": one of a repeatable option's values
            try:
                convert_option(param, value)
            except UsageError as exc:
                raise ConfigError(f"{source}: '{name}' = {_toml(value)}: {exc.format_message()}") from None
            out[param.name] = value
        return out

    return walk(root, config, [])


def _typing_origin(param: Any) -> Any:
    import typing

    return typing.get_origin(param.type_descriptor.annotation)


MAX_RESAMPLES = 1_000_000
"""The most bootstrap resamples ``--resamples`` takes (more only costs memory and time)."""

# Ranges of numeric options, by option name, wherever they appear (checked at the option, one
# line on a bad value). Every other integer option is a count (>= 0) unless listed as signed.
OPTION_RANGES: dict[str, tuple[float | None, float | None]] = {
    "limit": (1, None), "votes": (1, 15), "k": (1, None), "cluster_size": (2, None), "min_support": (1, None),
    "min_sources": (1, None), "diversity": (0.0, 1.0), "max_levels": (1, None), "tau": (0.0, 10.0),
    "runs": (0, None), "paraphrases": (0, None), "attacks": (0, None), "depth": (1, None), "beam": (1, None),
    "holdout": (0.0, 1.0), "epsilon": (0.0, 1.0), "eta": (0.0, 1.0), "port": (0, 65535),
    "seed": (0, 2**32 - 1), "resamples": (0, MAX_RESAMPLES),
}
SIGNED_OPTIONS: set[str] = set()


def _harden(command: Any) -> None:
    """Every numeric option of every command refuses NaN and ±Infinity (they are not numbers
    assay accepts) and values outside its range, at the option, with one line: integer options
    are counts (>= 0) unless :data:`OPTION_RANGES` or :data:`SIGNED_OPTIONS` say otherwise. The same
    walk gives ``--help-all`` to a command that hides expert options without it (:func:`_give_help_all`)."""
    if is_group(command):
        for sub in command.commands.values():
            _harden(sub)
        return
    for param in command.params:
        if not is_option(param) or param.name is None or getattr(param, "_assay_checked", False):
            continue
        param._assay_checked = True
        param.callback = _range_check(param.name, param.callback)
    _give_help_all(command)


def _give_help_all(command: Any) -> None:
    """A command whose help hides expert options (``--judge-opt``, ``--timeout``, ...) takes
    ``--help-all`` to show them, as ``assay eval NAME`` does; a method's own commands (``assay rubric
    audit``) declare those options without it."""
    from assay.cli._help import EXPERT, help_all_option

    params = command.params
    if any(p.name == "help_all" for p in params) or not any(
            getattr(p, "rich_help_panel", None) == EXPERT and getattr(p, "hidden", False) for p in params):
        return
    probe = typer.Typer()

    @probe.command()
    def probe_command(help_all: bool = help_all_option()) -> None:  # only its --help-all option is used
        pass

    params.append(typer.main.get_command(probe).params[0])


def _bound(value: float) -> str:
    """A range's end as written: a whole number in full (4294967295, not 4.29497e+09)."""
    return str(value) if isinstance(value, int) else f"{value:g}"


def _range_check(name: str, inner: Any) -> Any:
    import math

    low, high = OPTION_RANGES.get(name, (None, None))

    def check(ctx: Any, param: Any, value: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            if isinstance(value, float) and not math.isfinite(value):
                raise BadParameter(f"{value!r} is not a finite number", ctx=ctx, param=param)
            floor = low if low is not None else (0 if isinstance(value, int) and name not in SIGNED_OPTIONS else None)
            if floor is not None and value < floor:
                raise BadParameter(f"{value!r} is below the minimum {_bound(floor)}", ctx=ctx, param=param)
            if high is not None and value > high:
                raise BadParameter(f"{value!r} is above the maximum {_bound(high)}", ctx=ctx, param=param)
        return inner(ctx, param, value) if inner is not None else value

    return check


class _Terminated:
    """SIGTERM is turned into the same path as Ctrl-C (the run is marked interrupted and the
    lock released), then the process exits 143 instead of 130."""

    received = False

    @classmethod
    def handler(cls, signum: int, frame: object) -> None:
        cls.received = True
        if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):
            # SIGINT is ignored (a background job of a non-interactive shell) or not Python's:
            # raising it would do nothing; stop the run the way Ctrl-C does all the same.
            raise KeyboardInterrupt
        signal.raise_signal(signal.SIGINT)



def _fail(message: str, code: int) -> NoReturn:
    err_console.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True, highlight=False)
    sys.exit(code)


# Flags renamed so that one flag means one thing everywhere: --store is the run store, -o/--output a
# file the command writes. The old spellings keep working for one release, with a one-line notice.
# A method's or workflow's own commands declare theirs (HasCommands.renamed_flags, .flag_aliases).
RENAMED_FLAGS: dict[str, dict[str, str]] = {
    "demo": {"--out": "--store"},  # -o is the report written, as everywhere a file written
    "meta": {"--out": "--output"}, "injection": {"--out": "--output"},
}
SILENT_FLAGS = {"--run-id": "--run"}  # one name for a run id in every command; the old one is a hidden alias


def _renames(command: str) -> tuple[dict[str, str], dict[str, str]]:
    """The renamed flags of ``command`` (with a notice) and its silent aliases."""
    renames, silent = dict(RENAMED_FLAGS.get(command, {})), dict(SILENT_FLAGS)
    if command and command not in RENAMED_FLAGS and (command == "eval" or command not in BUILTIN_COMMANDS):
        from assay.core.protocols import command_line
        from assay.core.registry import methods, workflows

        for kind in [*methods().values(), *workflows().values()]:
            own = command_line(kind)
            renames.update(own.renamed_flags.get(command, {}))
            silent.update(own.flag_aliases.get(command, {}))
    return renames, silent


def _deprecated(args: list[str]) -> list[str]:
    """``args`` with the old flags replaced by their new names (a notice on stderr for each)."""
    words = [a for a in args if not a.startswith("-")]
    command = words[0] if words else ""
    renames, silent = _renames(command)
    out: list[str] = []
    for arg in args:
        name, eq, value = arg.partition("=")
        if arg == "--":
            out.extend(args[len(out):])
            break
        if name in silent:
            arg = silent[name] + (eq + value if eq else "")
        elif name in renames:
            err_console.print(f"note: {name} is now {renames[name]} (the old name goes in the next release)",
                              highlight=False)
            arg = renames[name] + (eq + value if eq else "")
        out.append(arg)
    return out


SERVING = ("ui",)
"""Commands that serve until stopped: stopping them interrupts no run."""


def main() -> None:
    """Entry point of the installed ``assay`` command: maps every outcome to its exit status
    (see :data:`EXIT_CODES`) and prints one readable line instead of a traceback."""
    debug = "--debug" in sys.argv[1:2]
    args = _deprecated([a for i, a in enumerate(sys.argv[1:]) if not (i == 0 and a == "--debug")])
    signal.signal(signal.SIGTERM, _Terminated.handler)
    try:
        try:
            command = typer.main.get_command(_tree_for(args))
            if _may_show_help(command, args):
                from assay.cli._help import install

                install()  # the compact help layout (one line per option, expert options behind --help-all)
            _harden(command)
            code = command.main(args=args, standalone_mode=False, default_map=load_config(), prog_name="assay")
        except KeyboardInterrupt:
            code = EXIT_INTERRUPTED
        if code == EXIT_INTERRUPTED:  # Typer turns KeyboardInterrupt into exit status 130
            command_name = next((a for a in (args or sys.argv[1:]) if not a.startswith("-")), "")
            if command_name in SERVING:  # a server stopped: no run was under way
                err_console.print(f"assay {command_name} stopped", soft_wrap=True)
                sys.exit(EXIT_TERMINATED if _Terminated.received else EXIT_INTERRUPTED)
            if _Terminated.received:
                err_console.print("terminated (SIGTERM); an unfinished run is marked interrupted — the same "
                                  "command continues it", soft_wrap=True)
                sys.exit(EXIT_TERMINATED)
            err_console.print("interrupted; an unfinished run is marked interrupted — the same command continues it",
                              soft_wrap=True)
            sys.exit(EXIT_INTERRUPTED)
    except typer.Abort:
        err_console.print("aborted")
        sys.exit(EXIT_INTERRUPTED)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except NoArgsIsHelpError as exc:  # a bare `assay` or `assay eval`: the help, as click shows it
        exc.show()
        sys.exit(EXIT_USAGE)
    except ClickException as exc:  # usage errors: unknown command or option, bad value
        hint = ""
        if isinstance(exc, UsageError) and exc.ctx is not None:
            hint = f" (see: {exc.ctx.command_path} --help)"
        _fail(f"{exc.format_message()}{hint}", EXIT_USAGE)
    except BudgetExhausted as exc:
        _fail(f"{exc}", EXIT_BUDGET)
    except JudgeCrashed as exc:
        _fail(f"{exc}; the run is saved: the same command continues it", EXIT_JUDGE)
    except JudgeUnreachable as exc:
        _fail(str(exc), EXIT_JUDGE)  # "the judge is unreachable: ..." or "every judge call failed: ..."
    except AssayError as exc:
        if debug:
            raise
        _fail(str(exc), EXIT_USAGE)
    except RecursionError:
        if debug:
            raise
        _fail("input nested too deeply to read", EXIT_USAGE)
    except sqlite3.DatabaseError as exc:  # a store damaged on disk or not writable
        if debug:
            raise
        opened = ", ".join(dict.fromkeys(OPENED_STORES)) or "the run store"
        _fail(f"{opened}: cannot be used as a run store ({exc})", EXIT_USAGE)
    except OSError as exc:
        if debug:
            raise
        _fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "), EXIT_USAGE)
    sys.exit(code if isinstance(code, int) else EXIT_OK)

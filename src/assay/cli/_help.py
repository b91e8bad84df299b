"""The layout of ``assay ... -h``: one compact line per option that fits 80 columns.

Typer's own layout gives each option five table columns (long name, short name, negative name,
type, help); at 80 columns the help column was 20 characters wide, a long option name was cut
(``--extraction-tem…``) and ``assay eval dece -h`` ran to 400 lines. Here an option is its names
and value placeholder, then its help in the rest of the line, wrapped under itself; a name too long
for the first column gets a line of its own. Options of the "Expert options" panel are hidden from
``-h``; ``--help-all`` lists them too (and the docs page of options).
"""

from __future__ import annotations

from typing import Any

import typer

# typer.rich_utils (and rich's markdown behind it) is imported by install(), when a help may be
# shown: a start of the `assay` command that shows none does not load it (~0.05 s).

EXPERT = "Expert options"
"""The help panel of the options few users change; hidden from ``-h``, listed by ``--help-all``."""
HELP_ALL_SEP = "\x1f"
"""Separates an option's short help (``-h``) from its full description (``--help-all``)."""
NAME_WIDTH = 26
"""Columns of the option names; help starts after them."""

_TYPE_WORDS = {"int": "INT", "int range": "INT", "float": "NUM", "float range": "NUM", "str": "TEXT", "path": "PATH",
               "file": "FILE", "bool": "", "choice": "TEXT", "filename": "FILE", "datetime": "TIME"}


def _names(param: Any) -> str:
    if param.param_type_name == "argument":
        return (param.metavar or param.name or "").upper()
    opts = sorted(param.opts, key=lambda o: (o.startswith("--"), o))  # -j, --judge
    names = ", ".join(opts)
    if param.secondary_opts:
        names += "/" + "/".join(param.secondary_opts)
    return names


def _placeholder(param: Any, ctx: Any) -> str:
    if param.param_type_name == "argument" or getattr(param, "is_flag", False):
        return ""
    if param.metavar:
        return str(param.metavar)
    shown = (param.display_type_rich(ctx=ctx) or "").strip("<>")
    return _TYPE_WORDS.get(shown, shown.upper())


def _default(param: Any, ctx: Any) -> str:
    if param.param_type_name == "argument" or param.show_default is False:
        return ""
    if isinstance(param.show_default, str):
        return param.show_default
    default = param.default
    if callable(default) or default is None or default == [] or default == ():
        return ""
    if getattr(param, "is_flag", False):
        if param.secondary_opts:
            return param.opts[-1] if default else param.secondary_opts[0]
        return ""
    return str(default)


def _help_text(param: Any, ctx: Any) -> str:
    short, _, full = (getattr(param, "help", None) or "").partition(HELP_ALL_SEP)
    text = " ".join((full if full and ctx.meta.get("assay_help_all") else short).replace("`", "").split())
    default = _default(param, ctx)
    if default:
        text += f" [default: {default}]"
    if param.required:
        text += " [required]"
    envvar = getattr(param, "envvar", None)
    if envvar and ctx.meta.get("assay_help_all"):
        text += f" [env: {envvar if isinstance(envvar, str) else ', '.join(envvar)}]"
    return text.strip()


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=width, break_long_words=True, break_on_hyphens=False) or [""]


def _panel_body(params: list[Any], ctx: Any, width: int) -> Any:
    from rich.text import Text

    body = Text(no_wrap=True, overflow="ignore")
    help_width = max(width - NAME_WIDTH, 20)
    first = True
    for param in params:
        names, placeholder = _names(param), _placeholder(param, ctx)
        head = f"{names} {placeholder}".rstrip()
        lines = _wrap(_help_text(param, ctx), help_width)
        rows: list[tuple[str, str]] = []
        if len(head) > NAME_WIDTH - 2:  # too long for the column: a line of its own, never cut
            for part in _wrap(head, width):
                rows.append((part, ""))
            rows += [("", line) for line in lines if line]
        else:
            rows.append((head, lines[0]))
            rows += [("", line) for line in lines[1:]]
        for left, right in rows:
            if not first:
                body.append("\n")
            first = False
            style = "bold cyan" if left.startswith("-") else "bold"
            if right:
                body.append(left.ljust(NAME_WIDTH), style=style if left else "")
                body.append(right)
            else:
                body.append(left, style=style)
    return body


def _print_options_panel(*, name: str, params: list[Any], ctx: Any, markup_mode: Any, console: Any) -> None:
    if not params:
        return
    from rich.panel import Panel

    width = min(console.width, 100) - 4  # the panel's border and padding
    console.print(Panel(_panel_body(params, ctx, width), border_style="dim", title=name, title_align="left",
                        width=width + 4))


_original_format_help: Any = None


def _format_help(*, obj: Any, ctx: Any, markup_mode: Any) -> None:
    import typer.rich_utils as _rich
    from rich.console import Group
    from rich.text import Text

    _original_format_help(obj=obj, ctx=ctx, markup_mode=markup_mode)
    params = getattr(obj, "params", [])
    hidden = [p for p in params if getattr(p, "rich_help_panel", None) == EXPERT and p.hidden]
    if hidden:
        console = _rich._get_rich_console()
        if any(getattr(p, "name", None) == "help_all" for p in params):
            told = f"{ctx.command_path} --help-all lists them, with the ASSAY_... variable that sets each option."
        else:  # a command without --help-all: name them
            told = ", ".join(max(p.opts, key=len) for p in hidden) + "."
        console.print(Group(Text(f" {len(hidden)} expert options are not shown: {told}", style="dim")))


def show_all(ctx: typer.Context, value: bool) -> None:
    """``--help-all``: the help with the expert options too."""
    if not value or ctx.resilient_parsing:
        return
    ctx.meta["assay_help_all"] = True
    for param in ctx.command.params:
        if getattr(param, "rich_help_panel", None) == EXPERT:
            param.hidden = False  # type: ignore[attr-defined]
    text = ctx.get_help()  # the rich layout prints itself and returns ""
    if text:
        typer.echo(text)
    raise typer.Exit(0)


def help_all_option() -> Any:
    return typer.Option(False, "--help-all", is_eager=True, expose_value=False, callback=show_all,
                        help="Show this help with the expert options too.")


def install() -> None:
    """Use this layout for every command's help (Typer 0.29, pinned in pyproject); once."""
    global _original_format_help
    import typer.rich_utils as _rich

    if _original_format_help is not None:
        return
    _original_format_help = _rich.rich_format_help
    _rich._print_options_panel = _print_options_panel
    _rich.rich_format_help = _format_help

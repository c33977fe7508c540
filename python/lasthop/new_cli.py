"""`lasthop new [TEMPLATE]` (a commented starting spec), `lasthop schema` (a JSON Schema of the
spec for editors) and `lasthop completion bash|zsh` (shell completion generated from the command
line's own parser)."""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

__all__ = ["TEMPLATES", "template_path", "add_parsers", "cmd_new", "cmd_schema", "cmd_completion", "completion_script"]

_TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"


def _templates() -> dict[str, Path]:
    return {p.stem: p for p in sorted(_TEMPLATE_DIR.glob("*.toml"))}


TEMPLATES = tuple(_templates())


def template_path(name: str) -> Path:
    """The file of template `name` (one of TEMPLATES)."""
    return _TEMPLATE_DIR / f"{name}.toml"


def _summary(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("description"):
            return line.split("=", 1)[1].strip().strip('"')
    return ""


def add_parsers(sub: Any) -> None:
    n = sub.add_parser("new", help="write a commented starting spec (a template) to edit and run")
    n.add_argument("template", nargs="?", default="cell", metavar="TEMPLATE",
                   help=f"one of: {', '.join(TEMPLATES)} (default: cell)")
    n.add_argument("-o", "--out", default=None, metavar="FILE",
                   help="where to write it (default: TEMPLATE.toml here); '-' prints it")
    n.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    n.add_argument("--list", action="store_true", help="list the templates")
    sc = sub.add_parser("schema", help="print a JSON Schema of the spec (for editors; see docs/spec.md)")
    sc.add_argument("-o", "--out", default=None, metavar="FILE", help="write it to FILE instead")
    c = sub.add_parser("completion", help="print a shell completion script (bash or zsh)")
    c.add_argument("shell", choices=["bash", "zsh"], metavar="SHELL", help="bash | zsh")


def cmd_schema(args: argparse.Namespace) -> int:
    from .errors import UserError
    from .results import write_atomic
    from .spec_schema import schema_text

    text = schema_text()
    if args.out is None or args.out == "-":
        sys.stdout.write(text)
        return 0
    out = Path(args.out)
    if out.is_dir():
        raise UserError(f"schema: {str(out)!r} is a directory; name a file")
    try:
        write_atomic(out, text.encode("utf-8"))
    except OSError as e:
        raise UserError(f"schema: cannot write {str(out)!r}: {e.strerror or e}") from None
    print(f"wrote {out}", file=sys.stderr)
    return 0


def cmd_new(args: argparse.Namespace) -> int:
    from .errors import UserError
    from .results import write_atomic

    templates = _templates()
    if args.list:
        for name, path in templates.items():
            print(f"{name:14s} {_summary(path)}")
        return 0
    if args.template not in templates:
        raise UserError(f"new: unknown template {args.template!r}; one of: {', '.join(templates)}")
    text = templates[args.template].read_text(encoding="utf-8")
    if args.out == "-":
        sys.stdout.write(text)
        return 0
    out = Path(args.out) if args.out else Path(f"{args.template}.toml")
    if out.is_dir():
        raise UserError(f"new: {str(out)!r} is a directory; name a file")
    if out.exists() and not args.force:
        raise UserError(f"new: {str(out)!r} exists; use --force to overwrite it")
    try:
        write_atomic(out, text.encode("utf-8"))
    except OSError as e:
        raise UserError(f"new: cannot write {str(out)!r}: {e.strerror or e}") from None
    print(f"wrote {out}: edit it (docs/spec.md), then: lasthop run {shlex.quote(str(out))}")
    return 0


# ---------------------------------------------------------------------------------------------
# Completion


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def _describe(p: argparse.ArgumentParser) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """(option strings, option → its choices, choices of the first positional)."""
    opts: list[str] = []
    choices: dict[str, list[str]] = {}
    positional: list[str] = []
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            continue
        if a.option_strings:
            opts += [o for o in a.option_strings if o not in ("-h",)]
            if a.choices:
                for o in a.option_strings:
                    choices[o] = [str(c) for c in a.choices]
        elif a.choices and not positional:
            positional = [str(c) for c in a.choices]
    return opts, choices, positional


def completion_script(shell: str, top: argparse.ArgumentParser) -> str:
    """A completion script for `lasthop` in `shell` from the command line's parser `top`:
    commands (and the live tools), each command's options, the values of options and
    positionals that have a fixed set, file names elsewhere."""
    from .live.cli import TOOLS
    from .reproduce import names as suite_names

    subs = _subparsers(top)
    commands = sorted(set(subs) | set(TOOLS))
    cases = []
    for name in sorted(subs):
        opts, choices, positional = _describe(subs[name])
        if name == "reproduce":
            positional = list(suite_names()) + ["all"]
        if name == "new":
            positional = list(TEMPLATES)
        prev_cases = "".join(
            f"        {shlex.quote(o)}) COMPREPLY=( $(compgen -W {shlex.quote(' '.join(v))} -- \"$cur\") ); return;;\n"
            for o, v in sorted(choices.items()))
        cases.append(
            f"    {name})\n"
            f"      opts={shlex.quote(' '.join(sorted(set(opts))))}\n"
            f"      words={shlex.quote(' '.join(positional))}\n"
            + (f"      case \"$prev\" in\n{prev_cases}      esac\n" if prev_cases else "")
            + "      ;;\n")
    body = (
        "# lasthop shell completion (generated by `lasthop completion " + shell + "`)\n"
        + ("autoload -U +X bashcompinit && bashcompinit\n" if shell == "zsh" else "")
        + "_lasthop() {\n"
        "  local cur prev cmd opts words\n"
        "  cur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
        "  prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
        "  COMPREPLY=()\n"
        "  if [[ $COMP_CWORD -eq 1 ]]; then\n"
        f"    COMPREPLY=( $(compgen -W {shlex.quote(' '.join(commands))} -- \"$cur\") )\n"
        "    return\n"
        "  fi\n"
        "  cmd=\"${COMP_WORDS[1]}\"\n"
        "  opts=\"\"; words=\"\"\n"
        "  case \"$cmd\" in\n"
        + "".join(cases)
        + "  esac\n"
        "  if [[ \"$cur\" == -* ]]; then\n"
        "    COMPREPLY=( $(compgen -W \"$opts --help\" -- \"$cur\") )\n"
        "  else\n"
        "    COMPREPLY=( $(compgen -W \"$words\" -- \"$cur\") $(compgen -f -- \"$cur\") )\n"
        "  fi\n"
        "}\n"
        "complete -o filenames -F _lasthop lasthop\n")
    return body


def cmd_completion(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    sys.stdout.write(completion_script(args.shell, parser))
    return 0

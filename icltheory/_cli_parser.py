"""The argument parser of the ``icltheory`` command line (usage texts, one-line errors,
"did you mean" suggestions)."""

from __future__ import annotations

import argparse
import difflib
import re
from typing import Callable, NoReturn, Sequence

from .core import PROFILES, BadInput

__all__ = ["build_parser", "parse_args", "USAGE_EPILOG"]

USAGE_EPILOG = """\
exit status: 0 holds, 1 fails, 2 bad input, 3 inconclusive, 4 internal error, 130 interrupted.
Start with `icltheory list`, then `icltheory describe CLAIM` for a claim's setting keys,
predicted constants and an example command."""

_CHECK_EPILOG = """\
Setting keys differ from claim to claim: `icltheory describe CLAIM` lists every key with its
type, range, default (per profile) and meaning, and every predicted constant --predict accepts."""


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are :class:`BadInput` (one line, exit 2)."""

    def error(self, message: str) -> NoReturn:
        raise BadInput(_friendlier(message, self))


def _friendlier(message: str, parser: argparse.ArgumentParser) -> str:
    m = re.match(r"argument (\S+): invalid choice: '(.*)' \(choose from (.*)\)$", message, re.S)
    if m and m.group(1) == "COMMAND":
        choices = re.findall(r"'([^']*)'", m.group(3))
        return _suggest(f"unknown command {m.group(2)[:40]!r}", m.group(2), choices,
                        f"commands: {', '.join(choices)}")
    m = re.match(r"unrecognized arguments: (.*)$", message, re.S)
    if m:
        first = m.group(1).split()[0] if m.group(1).split() else m.group(1)
        if first.startswith("-"):
            return _suggest(f"unknown option {first[:40]!r}", first.split("=")[0],
                            _all_options(parser), "see --help")
        return f"unexpected argument {first[:40]!r} (see --help)"
    return message


def _unrecognized(extra: Sequence[str], parser: argparse.ArgumentParser, cmd: str | None) -> str:
    """The one-line error for arguments the command does not take: an option is matched against
    the command's own options first; one that only other commands take says which do."""
    first = extra[0]
    if not first.startswith("-"):
        return f"unexpected argument {first[:40]!r} (see --help)"
    subs = _subparsers(parser)
    sub = subs.get(cmd) if cmd else None
    if sub is None:
        return _suggest(f"unknown option {first[:40]!r}", first.split("=")[0], _all_options(parser),
                        "see --help")
    name = first.split("=")[0]
    if name in _own_options(sub):  # the command's own option, written before the command
        return f"{name} is an option of {cmd!r}: write it after the command (icltheory {cmd} ... {name})"
    own = sorted(set(_own_options(sub)) | set(_own_options(parser)))
    near = difflib.get_close_matches(name, own, n=3, cutoff=0.7)
    head = f"unknown option {first[:40]!r} for {cmd!r}"
    if near and name not in near:
        return f"{head}; did you mean {', '.join(near)}?"
    takers = [c for c, p in subs.items() if name in _own_options(p)]
    if takers:
        return f"{cmd!r} takes no {name} (an option of {', '.join(takers)}; see icltheory {cmd} --help)"
    return f"{head} (see icltheory {cmd} --help)"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _own_options(parser: argparse.ArgumentParser) -> list[str]:
    return [o for action in parser._actions for o in action.option_strings if o.startswith("--")]


def _suggest(head: str, word: str, choices: Sequence[str], fallback: str) -> str:
    near = difflib.get_close_matches(word, list(choices), n=3, cutoff=0.7)
    return f"{head}; did you mean {', '.join(near)}?" if near else f"{head} ({fallback})"


def _all_options(parser: argparse.ArgumentParser) -> list[str]:
    """The long options of ``parser`` and of every command under it."""
    opts = set(_own_options(parser))
    for sub in _subparsers(parser).values():
        opts.update(_all_options(sub))
    return sorted(opts)


def _ascii_int(lo: int, hi: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not re.fullmatch(r"[0-9]{1,6}", text.strip()):
            raise argparse.ArgumentTypeError(f"expected a whole number written in digits, "
                                             f"got {text[:20]!r}")
        n = int(text)
        if not lo <= n <= hi:
            raise argparse.ArgumentTypeError(f"must be between {lo} and {hi}, got {n}")
        return n

    parse.__name__ = "number"
    return parse


def _common(p: argparse.ArgumentParser) -> None:
    # given before or after the command; SUPPRESS keeps a subcommand from resetting them
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="show the traceback of an internal error")
    p.add_argument("--quiet", "-q", action="store_true", default=argparse.SUPPRESS,
                   help="no progress bar or progress lines on stderr")


def _seconds(text: str) -> float:
    """A positive number of seconds (ASCII decimal)."""
    t = text.strip()
    if not re.fullmatch(r"[0-9]{1,9}(\.[0-9]{0,6})?|\.[0-9]{1,6}", t) or float(t) <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text[:20]!r}")
    return float(t)


def time_limit_arg(p: argparse.ArgumentParser) -> None:
    """The ``--time-limit SECONDS`` option (check, report, sweep)."""
    p.add_argument("--time-limit", type=_seconds, default=None, metavar="SECONDS",
                   help="stop after this many seconds of wall time: claims not finished by "
                        "then are inconclusive, naming the limit")


def _setting_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                   help="override a setting key (lists as comma-separated numbers); "
                        "`icltheory describe CLAIM` lists the keys")
    p.add_argument("--config", metavar="FILE", help="TOML file of setting keys (--set wins)")
    p.add_argument("--seed", default=None, metavar="S",
                   help="random seed, the setting key 'seed' (same seed → same numbers)")
    p.add_argument("--profile", choices=PROFILES, default=None,
                   help="quick | standard (default) | thorough: the setting key 'profile'")


def build_parser() -> argparse.ArgumentParser:
    """The full parser (every command and option)."""
    from . import __version__

    p = _Parser(prog="icltheory", description="Verify theorems about in-context learning: "
                "derive, measure and judge each paper's claims.", epilog=USAGE_EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"icltheory {__version__}")
    _common(p)
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_Parser)

    def command(name: str, help_: str, epilog: str | None = None) -> argparse.ArgumentParser:
        q = sub.add_parser(name, help=help_, description=help_[0].upper() + help_[1:] + ".",
                           epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
        _common(q)
        return q

    q = command("list", "list the claims (id and title)")
    q.add_argument("--json", action="store_true", help="every claim's full description as JSON")

    q = command("describe", "describe a claim: statement, source, setting keys, predicted "
                "constants, backends, an example command")
    q.add_argument("claim", metavar="CLAIM")
    q.add_argument("--json", action="store_true")

    q = command("check", "check claims and print their verdicts", _CHECK_EPILOG)
    q.add_argument("claims", nargs="+", metavar="CLAIM")
    _setting_args(q)
    q.add_argument("--predict", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                   help="replace a predicted constant by your own value (a wrong one fails)")
    out = q.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="one JSON object per claim")
    out.add_argument("--summary", action="store_true",
                     help="one line per claim: verdict, checks passed, what decided it")
    q.add_argument("--dry-run", action="store_true",
                   help="validate the setting and print what would run (resolved setting, "
                        "estimated work) without running it")
    time_limit_arg(q)

    q = command("constants", "print a claim's predicted constants with their meanings")
    q.add_argument("claim", metavar="CLAIM")
    _setting_args(q)
    q.add_argument("--json", action="store_true")

    q = command("derive", "print a claim's verified symbolic derivation")
    q.add_argument("claim", metavar="CLAIM")
    _setting_args(q)
    q.add_argument("--format", choices=("md", "json"), default="md")

    q = command("report", "check claims and write reports (Markdown, figures, JSON, index; "
                          "--html: offline HTML pages)")
    q.add_argument("claims", nargs="*", metavar="CLAIM")
    q.add_argument("--all", action="store_true", help="every registered claim (the default)")
    q.add_argument("--out", default="reports", metavar="DIR",
                   help="the report folder (default: reports)")
    q.add_argument("--html", action="store_true",
                   help="also write a self-contained HTML page per claim and index.html "
                        "(formulas as MathML, figures embedded: reads offline, no scripts)")
    _setting_args(q)
    q.add_argument("-j", "--jobs", type=_ascii_int(1, 1024), default=None, metavar="N",
                   help="run N claims at a time in worker processes (default: the machine's "
                        "cores; -j 1 runs them one after the other; outputs are identical)")
    time_limit_arg(q)

    from .explore import _cli as explore_cli
    from .sweep import _cli as sweep_cli

    sweep_cli.add_parser(sub)
    explore_cli.add_parsers(sub, _common)

    q = command("cache", "show or empty the disk cache of derived theory (each paper's SymPy "
                "derivations, kept once per machine)")
    q.add_argument("action", choices=("info", "clear"), metavar="ACTION",
                   help="info: folder, entries and size; clear: delete every entry")
    q.add_argument("--json", action="store_true", help="info as JSON")
    return p


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Parse a command line; a bare ``icltheory`` prints the usage and is bad input."""
    parser = build_parser()
    args, extra = parser.parse_known_args(list(argv))
    if "--" in extra:  # the end-of-options marker itself is no argument; what follows it may be
        extra.remove("--")
    if extra:
        raise BadInput(_unrecognized(extra, parser, args.cmd))
    if args.cmd is None:
        print(parser.format_help(), end="")
        raise BadInput("no command given (the usage is above)")
    args.debug = getattr(args, "debug", False)
    args.quiet = getattr(args, "quiet", False)
    return args

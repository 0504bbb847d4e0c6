"""The ``icltheory`` command line (thin: parse, call the API, print).

Exit status of ``check``: 0 every claim holds, 1 some claim fails, 3 none fails but some are
inconclusive, 2 bad input (one line on stderr, nothing written).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from .core import (
    PROFILES,
    BadInput,
    Claim,
    Setting,
    all_claims,
    get_claim,
    load_toml,
    parse_assignments,
    resolve_claims,
    run_check,
)
from .core._verdict import apply_predictions
from .report import dumps
from .sweep import _cli as _sweep_cli

EXIT_OK, EXIT_FAILS, EXIT_BAD_INPUT, EXIT_INCONCLUSIVE = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        raise BadInput(message)


def _progress_factory(label: str = ""):
    """A progress callback ``(fraction, what)`` drawing a tqdm bar on stderr when it is a
    terminal (nothing otherwise)."""
    if not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        return None
    bar = None

    def update(fraction: float, what: str = "") -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=1000, desc=label, leave=False, file=sys.stderr,
                       bar_format="{desc} {percentage:3.0f}%|{bar}| {elapsed}<{remaining} {postfix}")
        bar.n = int(1000 * min(max(fraction, 0.0), 1.0))
        bar.set_postfix_str(what[:40], refresh=True)

    return update


def _settings_for(claims: Sequence[Claim], args) -> list[Setting]:
    """Build each claim's setting from --config then --set (a key must fit some claim)."""
    raw: dict[str, Any] = {}
    if getattr(args, "config", None):
        raw.update(load_toml(args.config))
    raw.update(parse_assignments(getattr(args, "set", None) or []))
    if getattr(args, "seed", None) is not None:
        raw["seed"] = args.seed
    if getattr(args, "profile", None) is not None:
        raw["profile"] = args.profile
    settings = []
    for key in raw:
        if not any(key in c.setting_type.keys() or key in c.setting_type.aliases for c in claims):
            valid = sorted(set().union(*(c.setting_type.keys() for c in claims)))
            raise BadInput(f"setting {key!r}: unknown key; valid keys: {', '.join(valid)}")
    for c in claims:
        mine = {k: v for k, v in raw.items()
                if k in c.setting_type.keys() or k in c.setting_type.aliases}
        settings.append(c.setting(mine))
    return settings


def _add_setting_args(p: argparse.ArgumentParser, seed: bool = True) -> None:
    p.add_argument("--set", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                   help="override a setting key (lists as comma-separated numbers)")
    p.add_argument("--config", metavar="FILE", help="TOML file of setting keys")
    if seed:
        p.add_argument("--seed", type=int, default=None, help="random seed (same seed → same numbers)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="icltheory", description="Verify theorems about in-context learning.")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    q = sub.add_parser("list", help="list the claims")
    q.add_argument("--json", action="store_true")

    q = sub.add_parser("check", help="check claims and print verdicts")
    q.add_argument("claims", nargs="+", metavar="CLAIM")
    _add_setting_args(q)
    q.add_argument("--profile", choices=PROFILES, default=None,
                   help="quick | standard (default) | thorough (the setting key 'profile')")
    q.add_argument("--predict", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                   help="replace a predicted constant by your own value")
    q.add_argument("--json", action="store_true")

    q = sub.add_parser("constants", help="print a claim's predicted constants")
    q.add_argument("claim")
    _add_setting_args(q)
    q.add_argument("--json", action="store_true")

    q = sub.add_parser("derive", help="print a claim's verified derivation")
    q.add_argument("claim")
    _add_setting_args(q)
    q.add_argument("--format", choices=("md", "json"), default="md")

    q = sub.add_parser("report", help="check claims and write reports (Markdown, figures, JSON)")
    q.add_argument("claims", nargs="*", metavar="CLAIM")
    q.add_argument("--all", action="store_true", help="every registered claim")
    q.add_argument("--out", default="reports", metavar="DIR")
    _add_setting_args(q)
    q.add_argument("--profile", choices=PROFILES, default=None,
                   help="quick | standard (default) | thorough (the setting key 'profile')")
    _sweep_cli.add_parser(sub)
    return p


def _cmd_list(args) -> int:
    claims = all_claims()
    if args.json:
        print(dumps([c.describe() for c in claims]))
    else:
        width = max((len(c.id) for c in claims), default=0)
        for c in claims:
            print(f"{c.id:<{width}}  {c.title}")
    return EXIT_OK


def _exit_for(verdicts) -> int:
    kinds = {v.verdict for v in verdicts}
    if "fails" in kinds:
        return EXIT_FAILS
    if "inconclusive" in kinds:
        return EXIT_INCONCLUSIVE
    return EXIT_OK


def _print_verdict(v) -> None:
    print(f"{v.verdict.upper():<13} {v.claim}  ({v.runtime_s:.2f} s)")
    for c in v.checks:
        mark = {True: "ok  ", False: "FAIL", None: "??  "}[c.passed]
        print(f"    {mark} {c.name}: predicted {_short(c.predicted)}, measured {_short(c.measured)}"
              + (f"  [{c.detail}]" if c.detail else ""))
    for r in v.reasons:
        print(f"    reason: {r}")


def _short(x) -> str:
    from .report._markdown import fmt

    s = fmt(x)
    return s if len(s) <= 90 else s[:87] + "..."


def _cmd_check(args) -> int:
    claims = resolve_claims(args.claims)
    settings = _settings_for(claims, args)
    predict = parse_assignments(args.predict)
    mine: list[dict] = [dict(predict) for _ in claims]
    if predict and len(claims) > 1:  # each claim judges the --predict keys it predicts
        keys = [set(c.constants(s)) for c, s in zip(claims, settings)]
        for key in predict:
            if not any(key in k for k in keys):
                raise BadInput(f"--predict {key}: no named claim predicts {key!r}")
        mine = [{k: v for k, v in predict.items() if k in ks} for ks in keys]
    for c, s, m in zip(claims, settings, mine):  # malformed values are bad input before any run
        if m:
            apply_predictions(c.id, c.constants(s), m, c.informational)
    verdicts = [run_check(c, s, predict=m, progress=_progress_factory(c.id))
                for c, s, m in zip(claims, settings, mine)]
    if args.json:
        print(dumps([v.as_dict() for v in verdicts]))
    else:
        for v in verdicts:
            _print_verdict(v)
    return _exit_for(verdicts)


def _cmd_constants(args) -> int:
    claim = get_claim(args.claim)
    (setting,) = _settings_for([claim], args)
    consts = claim.constants(setting)
    if args.json:
        print(dumps({"claim": claim.id, "setting": setting.as_dict(), "constants": consts}))
    else:
        from .report._markdown import fmt

        for k, v in consts.items():
            print(f"{k} = {fmt(v, 10)}")
    return EXIT_OK


def _cmd_derive(args) -> int:
    claim = get_claim(args.claim)
    (setting,) = _settings_for([claim], args)
    d = claim.derive(setting)
    if d is None:
        print(f"{claim.id} has no symbolic derivation", file=sys.stderr)
        return EXIT_OK
    if args.format == "json":
        print(dumps(d.as_dict()))
    else:
        print(d.to_markdown(level=1))
    return EXIT_OK if d.ok else EXIT_FAILS


def _cmd_report(args) -> int:
    from .report import write_reports

    if args.all and args.claims:
        raise BadInput("give claim ids or --all, not both")
    claims = all_claims() if args.all or not args.claims else resolve_claims(args.claims)
    settings = _settings_for(claims, args)
    verdicts = []
    for c, s in zip(claims, settings):
        print(f"checking {c.id} ...", file=sys.stderr, flush=True)
        v = run_check(c, s, progress=_progress_factory(c.id))
        print(f"  {v.verdict} ({v.runtime_s:.1f} s)", file=sys.stderr, flush=True)
        verdicts.append(v)
    paths = write_reports(verdicts, args.out)
    print(f"wrote {len(paths)} files under {args.out}/ (index: {args.out}/index.md)")
    for v in verdicts:
        print(f"  {v.verdict:<13} {v.claim}")
    return EXIT_OK


_COMMANDS = {"list": _cmd_list, "check": _cmd_check, "constants": _cmd_constants,
             "derive": _cmd_derive, "report": _cmd_report, "sweep": _sweep_cli.run}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return _COMMANDS[args.cmd](args)
    except BadInput as exc:
        msg = " ".join(str(exc).split())
        print(f"icltheory: error: {msg}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:  # pragma: no cover
        print("icltheory: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # pragma: no cover - e.g. `icltheory derive X | head`
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def entry() -> None:  # console script
    sys.exit(main())

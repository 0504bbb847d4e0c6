"""The commands of the ``icltheory`` command line (thin: parse, call the API, print)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Callable, Sequence

from ._cli import EXIT_BAD_INPUT, EXIT_FAILS, EXIT_INCONCLUSIVE, EXIT_INTERNAL, EXIT_OK, _say
from ._cli_parser import parse_args
from .core import (
    BadInput,
    Claim,
    Setting,
    Verdict,
    all_claims,
    get_claim,
    load_toml,
    over_budget,
    parse_assignments,
    resolve_claims,
    run_check,
)
from .core._setting import TomlValue
from .core._verdict import apply_predictions, check_prediction_keys
from .report import dumps, fmt

__all__ = ["run_command"]

Progress = Callable[[float, str], None]


def run_command(argv: Sequence[str]) -> int:
    """Parse ``argv`` and run the command; bad input raises :class:`BadInput`."""
    args = parse_args(argv)
    if getattr(args, "time_limit", None) is None:
        return _COMMANDS[args.cmd](args)
    from .core._deadline import TimeLimitReached, clear_time_limit, set_time_limit

    set_time_limit(args.time_limit)
    try:
        return _COMMANDS[args.cmd](args)
    except TimeLimitReached as exc:  # struck while the settings were being resolved
        _say(f"icltheory: {exc}; nothing was run")
        return EXIT_INCONCLUSIVE
    finally:
        clear_time_limit()


# ----------------------------------------------------------------------------- helpers


def progress_bar(label: str, quiet: bool) -> tuple[Progress | None, Callable[[], None]]:
    """A progress callback ``(fraction, what)`` drawing a tqdm bar on stderr when stderr is a
    terminal and not ``quiet`` (else ``None``), and a function closing the bar."""
    if quiet or not sys.stderr.isatty():
        return None, lambda: None
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        return None, lambda: None
    import threading

    bar: Any = None
    stop = threading.Event()

    def tick() -> None:  # keep the elapsed time moving while a claim reports nothing
        while not stop.wait(0.5):
            if bar is not None:
                bar.refresh()

    def update(fraction: float, what: str = "") -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=1000, desc=label, leave=False, file=sys.stderr, dynamic_ncols=True,
                       bar_format="{desc} {percentage:3.0f}%|{bar}| {elapsed}<{remaining} "
                                  "{postfix}")
            threading.Thread(target=tick, daemon=True).start()
        # monotone: a claim's phases report their own fractions, never move the bar back
        bar.n = max(bar.n, int(1000 * min(max(fraction, 0.0), 1.0)))
        bar.set_postfix_str(what[:40], refresh=True)

    def close() -> None:
        stop.set()
        if bar is not None:
            bar.close()

    return update, close


def _settings_for(claims: Sequence[Claim], args: argparse.Namespace) -> list[Setting]:
    """Each claim's setting from --config, then --set, --seed, --profile (a key must fit some
    named claim; each claim takes the keys it has).  Resolving them may derive theory: the
    time limit applies."""
    from .core._deadline import hard_stop

    with hard_stop():
        return _resolve_settings(claims, args)


def _resolve_settings(claims: Sequence[Claim], args: argparse.Namespace) -> list[Setting]:
    raw: dict[str, Any] = {}
    if getattr(args, "config", None):
        raw.update(load_toml(args.config))
    raw.update(parse_assignments(getattr(args, "set", None) or []))
    for flag in ("seed", "profile"):
        value = getattr(args, flag, None)
        if value is None:
            continue
        if flag in raw:
            given = raw[flag].value if isinstance(raw[flag], TomlValue) else raw[flag]
            if str(given).strip() != str(value):
                raise BadInput(f"{flag} given twice: --{flag} {value} and "
                               f"{flag}={str(given).strip()[:40]} (in --set or --config)")
        raw[flag] = value

    def fits(c: Claim, key: str) -> bool:
        return key in c.setting_type.keys() or key in c.setting_type.aliases

    for key in raw:
        if not any(fits(c, key) for c in claims):
            import difflib

            valid = sorted(set().union(*(c.setting_type.keys() for c in claims)))
            near = difflib.get_close_matches(str(key), valid, n=3, cutoff=0.6)
            hint = f"did you mean {' or '.join(near)}? " if near else ""
            which = claims[0].id if len(claims) == 1 else "the named claims"
            raise BadInput(f"setting {str(key)[:40]!r}: unknown key for {which}; {hint}"
                           f"valid keys: {', '.join(valid)}")
    settings = [c.setting({k: v for k, v in raw.items() if fits(c, k)}) for c in claims]
    parts = []
    for k in raw:
        without = [c.id for c in claims if not fits(c, k)]
        if k not in ("seed", "profile") and without:
            names = ", ".join(without[:3]) + (f" and {len(without) - 3} more" if len(without) > 3 else "")
            parts.append(f"{str(k)[:40]} is not a key of {names}")
    if parts:  # said by _say_partial_keys once the input is known to be good (bad input: one line)
        args._partial_keys_note = f"icltheory: note: {'; '.join(parts)}; those run without it"
    return settings


def _say_partial_keys(args: argparse.Namespace) -> None:
    """The one stderr line on --set keys that only some of the named claims have (unless
    --quiet), once every input is checked and before anything runs."""
    note = getattr(args, "_partial_keys_note", None)
    if note and not getattr(args, "quiet", False):
        _say(note)


def _exit_for(verdicts: Sequence[Verdict]) -> int:
    kinds = {v.verdict for v in verdicts}
    if "fails" in kinds:
        return EXIT_FAILS
    if "inconclusive" in kinds:
        return EXIT_INCONCLUSIVE
    return EXIT_OK


def _internal_errors(items: Sequence[tuple[str, str | None, list[str]]], debug: bool) -> int:
    """One line naming the internal errors (claim, error, notes); exit 4.  ``--debug`` prints
    the tracebacks the runner kept in the notes."""
    bad = [(cid, err, notes) for cid, err, notes in items if err]
    if not bad:
        return EXIT_OK
    if debug:
        for cid, _, notes in bad:
            for n in notes:
                if n.startswith("traceback: "):
                    _say(f"--- {cid}\n{n[len('traceback: '):].rstrip()}")
    cid, err, _ = bad[0]
    more = f" (and {len(bad) - 1} more claim(s))" if len(bad) > 1 else ""
    text = " ".join(str(err).split())
    if text.startswith("internal error"):
        text = text[len("internal error"):].lstrip(" :")
    _say(f"icltheory: internal error: {cid}: {text[:300]}{more}"
         + ("" if debug else " (rerun with --debug for the traceback)"))
    return EXIT_INTERNAL


def _short(x: Any) -> str:
    s = fmt(x)
    return s if len(s) <= 90 else s[:87] + "..."


# ----------------------------------------------------------------------------- commands


def _cmd_list(args: argparse.Namespace) -> int:
    claims = all_claims()
    if args.json:
        print(dumps([c.describe() for c in claims]))
    else:
        width = max((len(c.id) for c in claims), default=0)
        for c in claims:
            print(f"{c.id:<{width}}  {c.title}")
    from .core import load_errors

    for err in load_errors():
        _say(f"icltheory: warning: a claim package failed to load: {err[:300]}")
    return EXIT_OK


def _cmd_describe(args: argparse.Namespace) -> int:
    from ._cli_describe import describe_data, describe_text

    claim = get_claim(args.claim)
    if args.json:
        print(dumps(describe_data(claim)))
    else:
        print(describe_text(claim))
    return EXIT_OK


def _print_verdict(v: Verdict) -> None:
    print(f"{v.verdict.upper():<13} {v.claim}  ({v.runtime_s:.2f} s)")
    for c in v.checks:
        mark = {True: "ok  ", False: "FAIL", None: "??  "}[c.passed]
        print(f"    {mark} {c.name}: predicted {_short(c.predicted)}, measured {_short(c.measured)}"
              + (f"  [{c.detail}]" if c.detail else ""))
    from .report._plain import plain  # the notes are Markdown with TeX: as terminal text

    for r in v.reasons:
        print(f"    reason: {plain(str(r))}")
    if not v.internal_error:  # (an internal error's notes hold its traceback: --debug prints them)
        for n in v.notes:
            print(f"    note: {plain(str(n))}")


def _summary_line(v: Verdict) -> str:
    """One line: the verdict, the claim, the checks passed, and what decided it."""
    ok = sum(c.passed is True for c in v.checks)
    why = ""
    if v.verdict == "fails":
        failed = [c for c in v.checks if c.passed is False]
        c = failed[0]
        why = f" — failed: {c.name} (predicted {_short(c.predicted)}, measured {_short(c.measured)})"
        if len(failed) > 1:
            why += f" and {len(failed) - 1} more"
    elif v.verdict == "inconclusive" and v.reasons:
        why = f" — {v.reasons[0]}"
    line = f"{v.verdict.upper():<13} {v.claim}  {ok}/{len(v.checks)} checks passed{why}"
    return line if len(line) <= 240 else line[:237] + "..."


def _dry_run(claims: Sequence[Claim], settings: Sequence[Setting], as_json: bool) -> int:
    rows: list[dict[str, Any]] = []
    for c, s in zip(claims, settings):
        refusal = over_budget(c, s)
        cost = c.cost(s) if refusal is None else None
        rows.append({"claim": c.id, "setting": s.as_dict(), "would_run": refusal is None,
                     "refusal": refusal,
                     "estimate": None if cost is None else
                     {"work": cost.work, "memory": cost.memory, "what": cost.what}})
    if as_json:
        print(dumps(rows))
        return EXIT_OK
    for r in rows:
        print(f"{r['claim']}: {fmt(r['setting'])}")
        if r["refusal"]:
            print(f"    would be inconclusive: {r['refusal']}")
        elif r["estimate"]:
            e = r["estimate"]
            print(f"    would run: about {e['work']:.3g} operations, {e['memory'] / 2**20:.3g} MiB"
                  + (f" ({e['what']})" if e["what"] else ""))
        else:
            print("    would run (no work estimate: small)")
    return EXIT_OK


def _cmd_check(args: argparse.Namespace) -> int:
    claims = resolve_claims(args.claims)
    settings = _settings_for(claims, args)
    predict = parse_assignments(args.predict)
    mine: list[dict[str, Any]] = [dict(predict) for _ in claims]
    if predict:  # malformed or unknown values are bad input before any run
        # (a setting beyond reach is not run at all: its verdict says why, whatever is predicted)
        keys = [set(c.predictions) if s.beyond_reach is not None else set(c.constants(s))
                for c, s in zip(claims, settings)]
        if len(claims) > 1:  # each claim judges the --predict keys it predicts
            for key in predict:
                if not any(key in k for k in keys):
                    raise BadInput(f"--predict {key}: no named claim predicts {key!r}")
            mine = [{k: v for k, v in predict.items() if k in ks} for ks in keys]
        for c, s, m in zip(claims, settings, mine):
            if m and s.beyond_reach is None:
                apply_predictions(c.id, c.constants(s), m, c.informational, getattr(c, "predictions", None))
            elif m:  # no constants there: what can be told without them
                check_prediction_keys(c.id, c.predictions, m, c.informational)
    _say_partial_keys(args)
    if args.dry_run:
        return _dry_run(claims, settings, args.json)
    verdicts = []
    for c, s, m in zip(claims, settings, mine):
        update, close = progress_bar(c.id, args.quiet)
        if update is not None:
            update(0.0, "")
        try:
            verdicts.append(run_check(c, s, predict=m, progress=update))
        finally:
            close()
    if args.json:
        print(dumps([v.as_dict() for v in verdicts]))
    elif args.summary:
        for v in verdicts:
            print(_summary_line(v))
    else:
        for v in verdicts:
            _print_verdict(v)
    sys.stdout.flush()
    code = _internal_errors([(v.claim, v.internal_error, v.notes) for v in verdicts], args.debug)
    return code or _exit_for(verdicts)


def _cmd_constants(args: argparse.Namespace) -> int:
    claim = get_claim(args.claim)
    (setting,) = _settings_for([claim], args)
    if setting.beyond_reach is not None:  # the theory's numbers there would need the run's steps
        print(f"{claim.id}: not run: {setting.beyond_reach}", file=sys.stderr)
        return EXIT_INCONCLUSIVE
    consts = claim.constants(setting)
    preds = getattr(claim, "predictions", None) or {}
    if args.json:
        print(dumps({"claim": claim.id, "setting": setting.as_dict(), "constants": consts,
                     "meanings": {k: {"meaning": p.meaning, "formula": p.formula, "kind": p.kind,
                                      "informational": p.informational}
                                  for k, p in preds.items()}}))
        return EXIT_OK
    print(f"{claim.id} at {fmt(setting.as_dict())}")
    width = max((len(k) for k in consts), default=0)
    for k, v in consts.items():
        p = preds.get(k)
        note = ""
        if p is not None:
            note = f"  # {p.meaning}" + (" (reported, not judged)" if p.informational else "")
        print(f"{k:<{width}} = {fmt(v, 10)}{note}")
    return EXIT_OK


def _cmd_derive(args: argparse.Namespace) -> int:
    claim = get_claim(args.claim)
    (setting,) = _settings_for([claim], args)
    d = claim.derive(setting)
    if d is None:
        _say(f"{claim.id} has no symbolic derivation")
        return EXIT_OK
    if args.format == "json":
        print(dumps(d.as_dict()))
    else:
        print(d.to_markdown(level=1))
    return EXIT_OK if d.ok else EXIT_FAILS


def _cmd_report(args: argparse.Namespace) -> int:
    from .report import check_out_dir, check_targets, recover, report_claims

    if args.all and args.claims:
        raise BadInput("give claim ids or --all, not both")
    claims = all_claims() if args.all or not args.claims else resolve_claims(args.claims)
    settings = _settings_for(claims, args)
    check_out_dir(args.out)  # before any check runs
    check_targets(args.out, [c.id for c in claims])
    _say_partial_keys(args)
    workers = args.jobs if args.jobs is not None else _cores()
    recover(args.out)  # finish or discard what a killed run left behind
    update, close = progress_bar("report", args.quiet)
    done = [0]

    def on_done(r: Any) -> None:
        done[0] += 1
        if not args.quiet:
            line = f"  [{done[0]}/{len(claims)}] {r.verdict:<13} {r.claim} ({r.runtime_s:.1f} s)"
            if update is not None:
                from tqdm import tqdm

                tqdm.write(line, file=sys.stderr)
            else:
                _say(line)

    try:
        results = report_claims(list(zip(claims, settings)), args.out, workers=workers,
                                progress=update, on_done=on_done,
                                known=[(c.id, c.title) for c in all_claims()], html=args.html)
    finally:
        close()
    index = f"{args.out}/index.md" + (f", {args.out}/index.html" if args.html else "")
    print(f"wrote {len(results)} report(s) under {args.out}/ (index: {index})")
    for r in results:
        print(f"  {r.verdict:<13} {r.claim}")
    sys.stdout.flush()
    return _internal_errors([(r.claim, r.internal_error, r.notes) for r in results], args.debug)


def _cores() -> int:
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from .sweep import _cli as sweep_cli

    return sweep_cli.run(args)


def _cmd_refute(args: argparse.Namespace) -> int:
    from .explore import _cli as explore_cli

    return explore_cli.run_refute(args)


def _cmd_boundary(args: argparse.Namespace) -> int:
    from .explore import _cli as explore_cli

    return explore_cli.run_boundary(args)


def _cmd_cache(args: argparse.Namespace) -> int:
    from .core import _cache

    if args.action == "clear":
        # an empty ICLTHEORY_CACHE_DIR means the default folder everywhere else; a destructive
        # command does not guess: a variable set to nothing is more likely a mistake
        if "ICLTHEORY_CACHE_DIR" in os.environ and not os.environ["ICLTHEORY_CACHE_DIR"].strip():
            raise BadInput("ICLTHEORY_CACHE_DIR is set but empty: unset it to clear the default cache folder, "
                           "or name the folder to clear")
        n = _cache.cache_clear()
        print(f"deleted {n} cache file(s) from {_cache.cache_info()['folder']}")
        return EXIT_OK
    info = _cache.cache_info()
    if args.json:
        print(dumps(info))
        return EXIT_OK
    state = "on" if info["enabled"] else f"off ({info['why_off']})"
    print(f"folder:  {info['folder']}\ndisk cache: {state}\n"
          f"entries: {info['entries']} ({info['bytes'] / 1e6:.2f} MB)")
    return EXIT_OK


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "list": _cmd_list, "describe": _cmd_describe, "check": _cmd_check,
    "constants": _cmd_constants, "derive": _cmd_derive, "report": _cmd_report,
    "sweep": _cmd_sweep, "refute": _cmd_refute, "boundary": _cmd_boundary,
    "cache": _cmd_cache,
}

assert EXIT_BAD_INPUT == 2  # documented in icltheory._cli

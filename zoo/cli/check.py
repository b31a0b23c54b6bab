"""``zoo check NAME...``: run the contract checks (:mod:`zoo.checks`) on registered components, a plugin
installed as a package or one in a plugin folder, without a checkout or pytest."""

from __future__ import annotations

import sys

from zoo.cli.args import CommandParser


def run(args: list[str], description: str) -> None:
    parser = CommandParser(prog="zoo check", description=description)
    parser.add_argument(
        "names",
        nargs="+",
        metavar="NAME",
        help="a component: NAME (every kind registered under it: s4d checks the encoder and the decoder), or KIND/NAME",
    )
    parser.add_argument("--plugin-dir", action="append", default=[], metavar="DIR", help="a plugin folder to load")
    parser.add_argument("--verbose", action="store_true", help="print every case, not only those that fail")
    opts = parser.parse_args(args)
    from zoo import registry
    from zoo.checks import cases_for, run_case
    from zoo.nn.recurrence import kernels_switched_on
    from zoo.registry.discovery import discover

    kernels_switched_on()  # $ZOO_CPU_KERNELS is on or off: a typo is one line now, not a failure in every case
    discover(opts.plugin_dir)
    components = [component for given in opts.names for component in resolve(given)]
    failed = 0
    for kind, name in components:
        outcomes = [run_case(case) for case in cases_for(kind, name)]
        bad = [o for o in outcomes if o.status == "failed"]
        failed += len(bad)
        counts = {status: sum(o.status == status for o in outcomes) for status in ("ok", "failed", "not applicable")}
        module = registry.get(kind, name).module
        print(f"{kind}/{name} [{module}]: " + ", ".join(f"{n} {status}" for status, n in counts.items() if n))
        for outcome in outcomes:
            if outcome.status != "ok" and (opts.verbose or outcome.status == "failed"):
                print(f"  {outcome.status.upper()}: {outcome.case.id}: {outcome.reason}")
            elif opts.verbose:
                print(f"  ok: {outcome.case.id}")
    if failed:
        print(f"zoo: error: {failed} contract check(s) failed; each line above says what was expected", file=sys.stderr)
        raise SystemExit(1)


def resolve(given: str) -> list[tuple[str, str]]:
    """``KIND/NAME`` -> that component; a bare ``NAME`` -> every (kind, name) registered under it (a family is
    often an encoder and a decoder of one name); anything else is one line."""
    from zoo import registry
    from zoo.config.suggest import did_you_mean, with_hint

    if "/" in given:
        kind, name = given.split("/", 1)
        registry.get(registry.kind(kind).name, name)
        return [(kind, name)]
    kinds = sorted(entry.kind for entry in registry.entries() if entry.name == given)
    if kinds:
        return [(kind, given) for kind in kinds]
    every = sorted({entry.name for entry in registry.entries()})
    raise registry.RegistryError(
        with_hint(f"no component is registered as '{given}'", did_you_mean(given, every), "`zoo list` shows them all")
    )

"""``synth --property NAME`` and ``synth --query NAME`` through the command line.

The regions are compared with Z3 against regions derived by hand from the models
(the random differential tests in ``test_synth_differential.py`` compare them with
the zone explorer and with the all-property region).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import z3
from helpers import ROOT, run_cli

HANDOFF = str(ROOT / "tests/queries/handoff.kvr")

# Reaching s1 needs T <= 3; reaching s2 also needs U <= 8 (the deadline); s2 breaks
# `never_s2`, and a stuck s1 (U > 8) deadlocks.
TWO = """model two
actor a
param T in [0, 10] = 5
param U in [0, 10] = 6
var ph : {s0, s1, s2} = s0
clock x
event a.go() when ph == s0 and x >= T and x <= 3 do ph := s1
event a.on() when ph == s1 and x >= U do ph := s2
deadline d: x <= 8 while ph == s1
invariant never_s2: ph != s2
reachable at_s2: ph == s2
"""


def _smtlib(doc: dict[str, object]) -> z3.BoolRef:
    return z3.And(*z3.parse_smt2_string(str(doc["smtlib"])))


def _same(a: z3.BoolRef, b: z3.BoolRef) -> bool:
    s = z3.Solver()
    s.add(a != b)
    return s.check() == z3.unsat


T, U, F = z3.Reals("T U T_flight")
BOX = z3.And(T >= 0, T <= 10, U >= 0, U <= 10)


def _two(tmp_path: Path) -> str:
    path = tmp_path / "two.kvr"
    path.write_text(TWO)
    return str(path)


def test_query_region(tmp_path: Path) -> None:
    code, out, _ = run_cli("synth", _two(tmp_path), "--query", "at_s2", "--json")
    doc = json.loads(out)
    assert (code, doc["verdict"], doc["coverage"], doc["query"]) == (0, "holds", "some",
                                                                     "at_s2")
    assert doc["reachable_region"] == "T <= 3 and U <= 8" and doc["safe_region"] is None
    assert _same(_smtlib(doc), z3.And(BOX, T <= 3, U <= 8))
    code, out, _ = run_cli("synth", HANDOFF, "--query", "landed_and_flying")
    assert code == 0 and "REACHABLE FOR: T_flight >= 1\n" in out, out


def test_query_never_reachable_is_unreachable() -> None:
    code, out, _ = run_cli("synth", HANDOFF, "--query", "landed_unposted")
    assert code == 5, out
    assert "UNREACHABLE: `reachable landed_unposted` is reachable for no parameter value" in out
    code, out, _ = run_cli("synth", HANDOFF, "--query", "landed_unposted", "--json")
    doc = json.loads(out)
    assert (doc["verdict"], doc["coverage"], doc["reachable_region"]) == (
        "unreachable", "none", "false")
    code, out, _ = run_cli("synth", HANDOFF, "--query", "both_flying", "--json")
    doc = json.loads(out)
    assert (code, doc["coverage"], doc["reachable_region"]) == (0, "all", "true")


def test_property_regions(tmp_path: Path) -> None:
    spec = _two(tmp_path)
    code, out, _ = run_cli("synth", spec, "--property", "never_s2", "--json")
    doc = json.loads(out)
    assert (code, doc["verdict"], doc["property"]) == (0, "holds", "never_s2")
    assert _same(_smtlib(doc), z3.And(BOX, z3.Or(T > 3, U > 8)))
    code, out, _ = run_cli("synth", spec, "--property", "deadlock", "--json")
    doc = json.loads(out)
    assert _same(_smtlib(doc), z3.And(BOX, z3.Or(T > 3, U <= 8)))
    code, out, _ = run_cli("synth", spec, "--json")
    doc = json.loads(out)  # every property: the intersection
    assert _same(_smtlib(doc), z3.And(BOX, T > 3))
    code, out, _ = run_cli("synth", spec, "--property", "never_s2")
    assert "covers: property never_s2 only" in out, out


def test_bad_target_names(tmp_path: Path) -> None:
    spec = _two(tmp_path)
    code, _, err = run_cli("synth", spec, "--property", "nope")
    assert code == 2 and "it declares: never_s2; also `deadlock` and `assert`" in err, err
    code, _, err = run_cli("synth", spec, "--query", "nope")
    assert code == 2 and "no query `reachable nope`" in err, err
    code, _, err = run_cli("synth", spec, "--query", "at_s2", "--property", "never_s2")
    assert code == 2, err
    code, _, err = run_cli("synth", spec, "--property", "deadlock", "--no-deadlock")
    assert code == 2, err


@pytest.mark.slow
def test_provenance_names_the_elements_bounding_each_constraint() -> None:
    flagship = str(ROOT / "spec/sglang/deferred_release.kvr")
    code, out, _ = run_cli("synth", flagship, "--provenance", "--json")
    doc = json.loads(out)
    assert code == 0
    [entry] = doc["provenance"]
    assert entry["constraint"] == doc["safe_region"] == "T_hold > T_prop + T_chunk + T_flight"
    got = {(s["kind"], s["element"], s["bound"], s["line"]) for s in entry["sources"]}
    assert got == {("guard", "event prefill.post", "since_told <= T_chunk", 62),
                   ("deadline", "deadline in_flight", "since_post <= T_flight", 74),
                   ("deadline", "deadline propagation", "since_abort <= T_prop", 85),
                   ("guard", "event decode.release", "since_abort >= T_hold", 88)}
    lines = (ROOT / "spec/sglang/deferred_release.kvr").read_text().splitlines()
    for s in entry["sources"]:  # each place holds the element it names
        assert s["element"].split()[-1].split(".")[-1] in lines[s["line"] - 1], s
    _, out, _ = run_cli("synth", flagship, "--provenance")
    assert ("provenance (the model elements whose bounds mention each constraint's"
            " parameters):\n  T_hold > T_prop + T_chunk + T_flight\n") in out, out
    assert "    deadline in_flight: since_post <= T_flight (" in out
    _, out, _ = run_cli("synth", flagship)
    assert "provenance" not in out  # only when asked for, in the text


def test_query_on_clocks_is_reachable_only_where_a_valuation_meets_it(tmp_path: Path) -> None:
    """A query with clock atoms holds where some valuation of the zone satisfies them: the
    parameters come from the zone cut by the query's atoms, not the whole zone."""
    spec = tmp_path / "clockq.kvr"
    spec.write_text("model clockq\nparam T in [0, 10] = 5\nactor a\nclock c\n"
                    "var x : 0..1 = 0\n"
                    "event a.go when x == 0 and c >= 3 do x := 1\n"
                    "reachable early: x == 1 and c < T\n", encoding="utf-8")
    code, out, _ = run_cli("synth", str(spec), "--query", "early", "--json")
    doc = json.loads(out)
    assert (code, doc["coverage"], doc["reachable_region"]) == (0, "some", "T > 3"), out
    # The zone explorer agrees on each side of the boundary.
    assert run_cli("check", str(spec), "-p", "T=3", "--query", "early")[0] == 5
    assert run_cli("check", str(spec), "-p", "T=3.5", "--query", "early")[0] == 0

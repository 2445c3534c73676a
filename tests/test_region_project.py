"""The region of a ``reachable`` query written short, and regions projected onto some
parameters (``synth --project``, IMITATOR's ``projectresult``).

* :func:`~checker.smt.regions.short_union`: the printed union, parsed back, is the
  computed one (Z3), on hand-made pieces and on random models, and never longer;
* :func:`~checker.smt.regions.projected`: the projection equals Z3's own
  (``Exists`` over the other parameters) on random models, safe and reachable
  regions alike;
* the command line: ``--project`` names free parameters, does not go with ``--plot``,
  and is in the JSON.
"""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

import pytest
import z3
from helpers import run_cli
from test_regions import parse_region
from test_synth_differential import PARAMS, _with_properties

from checker.language import load_text
from checker.model.compiled import SpecModel
from checker.smt import synth as sy
from checker.smt.lin import Lin, param_var
from checker.smt.regions import projected, region_view, safe_pieces, short_union


def _lin(coefs: dict[str, int], const: int, strict: bool = False) -> Lin:
    return Lin.make({param_var(p): Fraction(a) for p, a in coefs.items()}, Fraction(const),
                    strict)


def _dnf_z3(pieces: list[list[Lin]]) -> z3.BoolRef:
    return sy.dnf_z3(pieces, [])


def _equivalent(a: z3.BoolRef, b: z3.BoolRef) -> bool:
    s = z3.Solver()
    s.add(a != b)
    return bool(s.check() == z3.unsat)


BOX = [_lin({"A": -1}, 0), _lin({"A": 1}, -4), _lin({"B": -1}, 0), _lin({"B": 1}, -4)]


def test_adjacent_pieces_become_one() -> None:
    # 0 <= A <= 1 and 1 <= A <= 2 (B free): A <= 2.
    pieces = [[_lin({"A": 1}, -1)], [_lin({"A": -1}, 1), _lin({"A": 1}, -2)]]
    assert short_union(BOX, pieces) == [[_lin({"A": 1}, -2)]]


def test_pieces_apart_stay_apart() -> None:
    pieces = [[_lin({"A": 1}, -1)], [_lin({"A": -1}, 2)]]  # A <= 1 or A >= 2
    got = short_union(BOX, pieces)
    assert len(got) == 2
    assert _equivalent(z3.And(sy.region_z3([], BOX), _dnf_z3(got)),
                       z3.And(sy.region_z3([], BOX), _dnf_z3(pieces)))


def test_an_open_seam_is_kept() -> None:
    # A < 1 or A > 1: A = 1 is in neither piece, so no single piece.
    pieces = [[_lin({"A": 1}, -1, True)], [_lin({"A": -1}, 1, True)]]
    assert len(short_union(BOX, pieces)) == 2


def test_the_whole_box_is_true_and_nothing_is_false() -> None:
    pieces = [[_lin({"A": 1}, -2)], [_lin({"A": -1}, 2)]]  # A <= 2 or A >= 2
    assert short_union(BOX, pieces) == [[]]
    assert short_union(BOX, []) == []


def test_projection_of_a_slanted_piece() -> None:
    # B >= A + 1 within the box: A <= 3 for some B.
    shown, box = projected([[_lin({"A": 1, "B": -1}, 1)]], BOX, ["A", "B"], ["A"])
    assert shown == [[_lin({"A": 1}, -3)]]
    assert _equivalent(sy.region_z3([], box), z3.And(z3.Real("A") >= 0, z3.Real("A") <= 4))


def _check_projection(result: sy.SynthResult, pieces: list[list[Lin]]) -> None:
    """Projected onto A, against Z3's Exists over B."""
    shown, box = projected(pieces, result.ranges, list(PARAMS), ["A"])
    ranges = sy.region_z3([], result.ranges)
    exact = z3.Exists([z3.Real("B")], z3.And(ranges, _dnf_z3(pieces)))
    mine = z3.And(sy.region_z3([], box), _dnf_z3(shown))
    assert _equivalent(z3.Tactic("qe").apply(exact).as_expr(), mine)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(400, 425))
def test_random_regions_short_and_projected(seed: int) -> None:
    r = random.Random(seed)
    text = _with_properties(r)
    model = SpecModel(load_text(text, "<synthrand>"))
    query = sy.explore_parametric(model, PARAMS, max_states=300, timeout=5,
                                  target=sy.Target(sy.TargetKind.QUERY, "q"))
    safe = sy.explore_parametric(model, PARAMS, max_states=300, timeout=5)
    if not (query.complete and safe.complete):
        pytest.skip("parametric exploration did not finish")
    raw = sy.reach_region(query)
    view = region_view(query, True, None, list(PARAMS))
    ranges = sy.region_z3([], query.ranges)
    assert _equivalent(z3.And(ranges, parse_region(view.text, list(PARAMS))),
                       z3.And(ranges, _dnf_z3(raw))), view.text
    assert len(view.printed) <= sum(len(p) for p in raw)
    _check_projection(query, raw)
    pieces = safe_pieces(safe)
    if pieces is not None:
        _check_projection(safe, pieces)


QUERY = """model q
param A in [0, 4] = 1
param B in [0, 4] = 2
actor p
var ph : {s0, s1} = s0
clock x
event p.go() when ph == s0 and x >= A and x <= 2 and x >= B - 1 do ph := s1
reachable there: ph == s1
"""
"""Reachable iff A <= 2 and B <= 3 (and B - 1 <= 2): onto A, A <= 2."""


def _write(tmp_path: Path) -> str:
    path = tmp_path / "q.kvr"
    path.write_text(QUERY)
    return str(path)


def test_project_on_the_command_line(tmp_path: Path) -> None:
    spec = _write(tmp_path)
    code, out, err = run_cli("synth", spec, "--query", "there", "--project", "A", "-q")
    assert code == 0, err
    assert "projected onto A:" in out and "REACHABLE FOR: A <= 2\n" in out, out
    code, out, _ = run_cli("synth", spec, "--query", "there", "--project", "A", "--json")
    doc = json.loads(out)
    assert (doc["project"], doc["reachable_region"]) == (["A"], "A <= 2")
    a = z3.Real("A")
    assert _equivalent(z3.And(*z3.parse_smt2_string(doc["smtlib"])), z3.And(a >= 0, a <= 2))
    code, out, _ = run_cli("synth", spec, "--query", "there", "-q")
    assert "REACHABLE FOR: A <= 2 and B <= 3\n" in out, out


@pytest.mark.parametrize(("args", "message"), [
    (["--project", "C"], "--project C: not a free parameter (free: A, B)"),
    (["--project", ","], "--project needs at least one free parameter"),
    (["--project", "A", "--plot", "r.svg"], "it does not go with --project"),
])
def test_project_refusals(tmp_path: Path, args: list[str], message: str) -> None:
    code, out, err = run_cli("synth", _write(tmp_path), "--query", "there", *args)
    assert code == 2 and out == "" and message in err, err


def test_too_many_pieces_are_left_as_they_are() -> None:
    from checker.smt import regions

    pieces = [[_lin({"A": -1}, k), _lin({"A": 1}, -k - 1)] for k in range(3)]  # k <= A <= k+1
    assert short_union(BOX, pieces) == [[_lin({"A": 1}, -3)]]
    many = pieces * (regions.MAX_DNF_PIECES // 3 + 1)
    assert short_union(BOX, many) == sorted(sorted(p) for p in many)

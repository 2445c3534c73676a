"""Readable regions (:mod:`checker.smt.regions`): the printed region, parsed back, is
the computed one (Z3), on hand-made regions, on random models and on every spec of
``spec/`` that synthesizes; and it is never longer than the raw clause form."""

from __future__ import annotations

import random
from fractions import Fraction
from pathlib import Path

import pytest
import z3
from helpers import ROOT
from test_synth_differential import PARAMS, render

from checker.api import load_spec
from checker.language import ast, load_text
from checker.language.assume import parse_assumption
from checker.language.syntax import parse_expression
from checker.model.compiled import SpecModel
from checker.smt import synth as sy
from checker.smt.lin import Lin, param_var
from checker.smt.regions import Form, readable


def parse_region(text: str, params: list[str]) -> z3.BoolRef:
    """A printed region (``true``, ``false``, or and/or of comparisons) as Z3."""
    if text in ("true", "false"):
        return z3.BoolVal(text == "true")
    expr = parse_expression(text, "<region>")

    def conv(e: ast.Expr) -> z3.BoolRef:
        if isinstance(e, ast.Binary) and e.op in ("and", "or"):
            parts = [conv(e.left), conv(e.right)]
            return z3.And(*parts) if e.op == "and" else z3.Or(*parts)
        assert e.span.line == e.span.end_line
        atom = text[e.span.column - 1:e.span.end_column - 1]
        [((coefs, const), op)] = parse_assumption(atom, params)
        term = z3.RealVal(str(const)) + z3.Sum(
            [z3.RealVal(str(a)) * z3.Real(p) for p, a in coefs.items()] or [z3.RealVal(0)])
        return {"<": term < 0, "<=": term <= 0, ">": term > 0, ">=": term >= 0,
                "==": term == 0}[op]

    return conv(expr)


def _equivalent(a: z3.BoolRef, b: z3.BoolRef) -> bool:
    s = z3.Solver()
    s.add(a != b)
    return s.check() == z3.unsat


def check_printed(result: sy.SynthResult, order: list[str]) -> str:
    """The printed region; asserts it is the computed one and no longer than the raw
    clauses."""
    shown = readable(result)
    text = shown.text(order)
    raw = sy.safe_region(result)
    exact = sy.region_z3(raw, result.ranges)
    ranges = sy.region_z3([], result.ranges)
    assert _equivalent(z3.And(ranges, parse_region(text, order)), exact), text
    assert _equivalent(shown.z3(result.ranges), exact), text
    assert shown.size <= sum(len(c) for c in raw)
    return text


def _lin(coefs: dict[str, int], const: Fraction | int, strict: bool) -> Lin:
    """``sum(coefs) + const < 0`` (``<= 0``) over parameters."""
    return Lin.make({param_var(p): Fraction(a) for p, a in coefs.items()}, Fraction(const),
                    strict)


def _result(ranges: list[Lin], bad: list[list[Lin]], free: list[str]) -> sy.SynthResult:
    return sy.SynthResult(True, free, ranges, sy.Region(bad), sy.SynthStats())


RAIL = ["dA", "dS", "dG"]
RAIL_RANGES = [_lin({"dA": -1}, 0, False), _lin({"dA": 1}, -20, False),
               _lin({"dS": -1}, 0, False), _lin({"dS": 1}, -10, False),
               _lin({"dG": -1}, 0, True), _lin({"dG": 1}, -10, False)]


def test_rail_gate_region_prints_as_one_constraint() -> None:
    # Bad: dS <= dA <= dS + dG, and dA <= dS.  The raw clauses read
    # (dA > dS + dG or dA < dS) and dA > dS.
    bad = [[_lin({"dA": 1, "dS": -1, "dG": -1}, 0, False), _lin({"dS": 1, "dA": -1}, 0, False)],
           [_lin({"dA": 1, "dS": -1}, 0, False)]]
    result = _result(RAIL_RANGES, bad, RAIL)
    assert sy.region_text(sy.safe_region(result), RAIL) == \
        "(dA > dS + dG or dA < dS) and dA > dS"
    assert check_printed(result, RAIL) == "dA > dS + dG"


def test_a_union_prints_as_pieces_when_shorter() -> None:
    # Safe: T < 1 or T > 2, and U anything, except the square 4 <= T, U <= 5.
    free = ["T", "U"]
    ranges = [_lin({"T": -1}, 0, False), _lin({"T": 1}, -10, False),
              _lin({"U": -1}, 0, False), _lin({"U": 1}, -10, False)]
    bad = [[_lin({"T": -1}, 1, False), _lin({"T": 1}, -2, False)]]
    result = _result(ranges, bad, free)
    assert check_printed(result, free) == "T > 2 or T < 1"
    assert readable(result).form is Form.CNF  # one clause: the same either way
    bad2 = [*bad, [_lin({"T": -1}, 4, False), _lin({"T": 1}, -5, False),
                   _lin({"U": -1}, 4, False), _lin({"U": 1}, -5, False)]]
    check_printed(_result(ranges, bad2, free), free)


def test_orientation_as_a_person_writes() -> None:
    assert sy.lin_text(_lin({"D": 2, "G": -1}, 0, False), ["D", "G"]) == "G >= 2*D"
    assert sy.lin_text(Lin.make({"p:D": Fraction(1), "p:G": Fraction(-1, 2)}, Fraction(0),
                                False), ["D", "G"]) == "G >= 2*D"
    assert sy.lin_text(_lin({"T_a": 3}, -1, True), ["T_a"]) == "T_a < 1/3"
    assert sy.lin_text(_lin({"T_hold": -1, "T_prop": 1, "T_flight": 1}, 0, True),
                       ["T_prop", "T_flight", "T_hold"]) == "T_hold > T_prop + T_flight"


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(200, 215))
def test_printed_region_of_random_models(seed: int) -> None:
    spec = load_text(render(random.Random(seed)), "<synthrand>")
    result = sy.explore_parametric(SpecModel(spec), PARAMS, max_states=500, timeout=20)
    if not result.complete:
        pytest.skip("parametric exploration did not finish")
    check_printed(result, list(PARAMS))


SPECS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "spec").rglob("*.kvr"))
LONG_SYNTHESIS = {"spec/vllm/lease_renewal.kvr", "spec/vllm/push_write_after_expiry.kvr"}
"""Specs whose synthesis over every parameter runs past a minute (their pinned regions
free fewer parameters)."""


@pytest.mark.slow
@pytest.mark.parametrize("path", SPECS)
def test_printed_region_of_every_spec(path: str) -> None:
    if path in LONG_SYNTHESIS:
        pytest.skip("synthesis over every parameter runs past a minute")
    spec = load_spec(Path(ROOT / path))
    free = [p.name for p in spec.params if p.lo is not None or p.hi is not None]
    result = sy.explore_parametric(SpecModel(spec, concrete=False), free, timeout=30)
    if not result.complete:
        pytest.skip("synthesis did not finish within 30 s")
    check_printed(result, [p.name for p in spec.params])

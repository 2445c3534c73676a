"""Parsing parameter constraints given on the command line (``--assume``).

An assumption is a conjunction of linear comparisons over the timing
parameters, written like a clock bound: ``T_hold > T_prop + T_chunk + T_flight
and T_prop <= 5``.  Errors are positioned diagnostics on the text
``<--assume>``.
"""

from __future__ import annotations

from collections.abc import Collection
from fractions import Fraction

from checker.diagnostics import Diagnostic, Span, SpecError
from checker.language import ast
from checker.language.elaborate import Elaborator
from checker.language.syntax import parse_expression
from checker.model.interface import Param

SOURCE = "<--assume>"

Linear = tuple[dict[str, Fraction], Fraction]
"""(coefficients by parameter, constant)."""


def _linear(el: Elaborator, e: ast.Expr) -> Linear | None:
    got = el.linear(e, "an assumption")
    if got is None:
        return None
    return dict(got.terms), got.const


def parse_assumption(text: str, params: Collection[str]) -> list[tuple[Linear, str]]:
    """``text`` as a list of ``(left - right, op)`` comparisons, all to hold together.

    ``op`` is one of ``< <= > >= ==``.  Raises SpecError with positions in ``text``.
    """
    expr = parse_expression(text, SOURCE)
    el = Elaborator(ast.SpecFile(SOURCE, "", Span(1, 1, 1, 2), ()), text)
    el.params = {p: Param(p, Fraction(0)) for p in params}
    diags: list[Diagnostic] = []
    out: list[tuple[Linear, str]] = []
    stack = [expr]
    atoms: list[ast.Expr] = []
    while stack:
        e = stack.pop()
        if isinstance(e, ast.Binary) and e.op == "and":
            stack.extend([e.right, e.left])
        else:
            atoms.append(e)
    for a in atoms:
        if not (isinstance(a, ast.Binary) and a.op in ("<", "<=", ">", ">=", "==")):
            diags.append(Diagnostic(
                "KVR201",
                "an assumption is a conjunction (`and`) of comparisons `<`, `<=`, `>`, `>=`,"
                " `==` between linear expressions", SOURCE, a.span))
            continue
        left = _linear(el, a.left)
        right = _linear(el, a.right)
        if left is None or right is None:
            continue
        coefs = dict(left[0])
        for p, c in right[0].items():
            coefs[p] = coefs.get(p, Fraction(0)) - c
        out.append(((coefs, left[1] - right[1]), a.op))
    if not atoms:
        diags.append(Diagnostic("KVR201", "empty assumption", SOURCE, Span(1, 1, 1, 2)))
    diags.extend(el.diags)
    if diags:
        raise SpecError(diags, text)
    return out


# ---- regions: and, or, not over comparisons ---------------------------------------------

REGION_SOURCE = "<region>"

Comparison = tuple[Linear, str]
"""``(left - right, op)``: the comparison ``left op right``."""

RegionFormula = bool | Comparison | tuple[str, tuple["RegionFormula", ...]]
"""A region: ``True``/``False``, a comparison, or ``("and" | "or" | "not", parts)``."""


def parse_region(text: str, params: Collection[str]) -> RegionFormula:
    """``text`` — comparisons of linear expressions over ``params`` combined with
    ``and``, ``or``, ``not``, ``=>`` and parentheses, or ``true``/``false`` — as a
    :data:`RegionFormula` (``!=`` is kept as the op).  Raises SpecError with positions
    in ``text``."""
    expr = parse_expression(text, REGION_SOURCE)
    el = Elaborator(ast.SpecFile(REGION_SOURCE, "", Span(1, 1, 1, 2), ()), text)
    el.params = {p: Param(p, Fraction(0)) for p in params}
    diags: list[Diagnostic] = []

    def convert(e: ast.Expr) -> RegionFormula | None:
        if isinstance(e, ast.BoolLit):
            return e.value
        if isinstance(e, ast.Unary) and e.op == "not":
            inner = convert(e.operand)
            return None if inner is None else ("not", (inner,))
        if isinstance(e, ast.Binary) and e.op in ("and", "or", "=>"):
            left, right = convert(e.left), convert(e.right)
            if left is None or right is None:
                return None
            if e.op == "=>":
                return ("or", (("not", (left,)), right))
            return (e.op, (left, right))
        if isinstance(e, ast.Binary) and e.op in ("<", "<=", ">", ">=", "==", "!="):
            lhs, rhs = _linear(el, e.left), _linear(el, e.right)
            if lhs is None or rhs is None:
                return None
            coefs = dict(lhs[0])
            for p, c in rhs[0].items():
                coefs[p] = coefs.get(p, Fraction(0)) - c
            return ((coefs, lhs[1] - rhs[1]), e.op)
        diags.append(Diagnostic(
            "KVR201", "a region combines comparisons `<`, `<=`, `>`, `>=`, `==`, `!=` of"
            " linear expressions with `and`, `or`, `not`", REGION_SOURCE, e.span))
        return None

    got = convert(expr)
    diags.extend(el.diags)
    if diags or got is None:
        raise SpecError(diags, text)
    return got

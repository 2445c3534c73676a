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

"""Parsing parameter constraints given on the command line (``--assume``).

An assumption is a conjunction of linear comparisons over the timing
parameters, written like a clock bound: ``T_hold > T_prop + T_chunk + T_flight
and T_prop <= 5``.  Errors are positioned diagnostics on the text
``<--assume>``.
"""

from __future__ import annotations

from collections.abc import Collection
from fractions import Fraction

from checker.diagnostics import Diagnostic, Span, SpecError, did_you_mean
from checker.language import ast
from checker.language.syntax import parse_expression

SOURCE = "<--assume>"

Linear = tuple[dict[str, Fraction], Fraction]
"""(coefficients by parameter, constant)."""


def _linear(e: ast.Expr, params: Collection[str], diags: list[Diagnostic]) -> Linear | None:
    if isinstance(e, ast.Num):
        return {}, e.value
    if isinstance(e, ast.Ref) and e.index is None:
        if e.name in params:
            return {e.name: Fraction(1)}, Fraction(0)
        diags.append(Diagnostic("KVR101", f"unknown parameter `{e.name}`", SOURCE, e.name_span,
                                did_you_mean(e.name, params)))
        return None
    if isinstance(e, ast.Unary) and e.op == "-":
        got = _linear(e.operand, params, diags)
        if got is None:
            return None
        return {p: -a for p, a in got[0].items()}, -got[1]
    if isinstance(e, ast.Binary) and e.op in ("+", "-", "*", "/"):
        left = _linear(e.left, params, diags)
        right = _linear(e.right, params, diags)
        if left is None or right is None:
            return None
        if e.op in ("+", "-"):
            sign = 1 if e.op == "+" else -1
            coefs = dict(left[0])
            for p, a in right[0].items():
                coefs[p] = coefs.get(p, Fraction(0)) + sign * a
            return coefs, left[1] + sign * right[1]
        if e.op == "*" and (not left[0] or not right[0]):
            k, (cs, c0) = (left[1], right) if not left[0] else (right[1], left)
            return {p: k * a for p, a in cs.items()}, k * c0
        if e.op == "/" and not right[0] and right[1] != 0:
            return {p: a / right[1] for p, a in left[0].items()}, left[1] / right[1]
    diags.append(Diagnostic("KVR303", "an assumption must be linear in the parameters",
                            SOURCE, e.span))
    return None


def parse_assumption(text: str, params: Collection[str]) -> list[tuple[Linear, str]]:
    """``text`` as a list of ``(left - right, op)`` comparisons, all to hold together.

    ``op`` is one of ``< <= > >= ==``.  Raises SpecError with positions in ``text``.
    """
    expr = parse_expression(text, SOURCE)
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
        left = _linear(a.left, params, diags)
        right = _linear(a.right, params, diags)
        if left is None or right is None:
            continue
        coefs = dict(left[0])
        for p, c in right[0].items():
            coefs[p] = coefs.get(p, Fraction(0)) - c
        out.append(((coefs, left[1] - right[1]), a.op))
    if not atoms:
        diags.append(Diagnostic("KVR201", "empty assumption", SOURCE, Span(1, 1, 1, 2)))
    if diags:
        raise SpecError(diags, text)
    return out

"""``reachable NAME: expr`` queries: exact results on a small spec, the command line
(exit codes, ``--query``, ``--witness``, JSON), and agreement with the integer-time
reference explorer on random models.

A wrong "never reachable" is as bad as a wrong "holds": the differential test
checks, for every query of every random model, that the zone explorer finds a
witness exactly when the reference explorer reaches a state satisfying the
query, and (breadth-first) with the same fewest number of events.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from helpers import ROOT, run_cli
from modelgen import model_for_seed
from reference import INCONCLUSIVE, MODEL_ERROR, Semantics, reference_explore, replay

from checker import api
from checker.engines import Limits, Options, explore
from checker.engines.search import REACHABLE, UNREACHABLE
from checker.language import load_text
from checker.model import ir
from checker.model.compiled import SpecModel
from checker.model.interp import InterpretedModel

HANDOFF = "tests/queries/handoff.kvr"


# ---- one small spec, exactly -------------------------------------------------------------


def test_api_reports_each_query() -> None:
    out = api.check(ROOT / HANDOFF)
    assert out.verdict == api.UNREACHABLE
    assert [(q.name, q.status) for q in out.queries] == [
        ("both_flying", REACHABLE), ("landed_and_flying", REACHABLE),
        ("landed_unposted", UNREACHABLE)]
    both = out.query("both_flying").trace
    assert both is not None
    assert [s.label for s in both.steps] == ["initial", "sender.post(A)", "sender.post(B)"]
    landed = out.query("landed_and_flying").trace
    assert landed is not None
    assert [s.label for s in landed.steps] == [
        "initial", "sender.post(A)", "sender.post(B)", "receiver.land(A)"]
    # Timed like a counterexample: the landing is at least 1 after its post.
    times = [s.time for s in landed.steps]
    assert all(t is not None for t in times)
    assert times[3] - times[1] >= 1  # type: ignore[operator]
    assert out.query("landed_unposted").trace is None
    assert out.summary() == ("unreachable: every property holds, but never reachable:"
                             " landed_unposted")
    out.assert_reachable("both_flying")
    with pytest.raises(AssertionError):
        out.assert_reachable("landed_unposted")
    with pytest.raises(AssertionError):
        out.assert_holds()


def test_cli_exit_5_and_text(in_root: Path) -> None:
    code, out, err = run_cli("check", HANDOFF, "-q")
    assert code == 5
    assert err == ""
    assert out.splitlines()[1] == (
        "UNREACHABLE: every property holds (exploration complete), but these `reachable`"
        " queries are never reachable: landed_unposted")
    assert ("reachable landed_and_flying: REACHABLE: `exists r: Req, q: Req . phase[r] =="
            " landed and phase[q] == flying`; shortest witness, 3 events:") in out
    assert ("reachable landed_unposted: NEVER REACHABLE: no reachable state satisfies"
            " `exists r: Req . phase[r] == landed and not posted[r]` (exploration complete)"
            ) in out


def test_cli_json(in_root: Path) -> None:
    code, out, _ = run_cli("check", HANDOFF, "-q", "--json")
    doc = json.loads(out)
    assert code == 5
    assert (doc["verdict"], doc["exit_code"], doc["query"]) == ("unreachable", 5, None)
    assert [(q["name"], q["status"], q["events"]) for q in doc["queries"]] == [
        ("both_flying", "reachable", 2), ("landed_and_flying", "reachable", 3),
        ("landed_unposted", "unreachable", None)]
    witness = doc["queries"][1]["trace"]
    assert witness["#meta"]["verdict"] == "reachable"
    assert witness["#meta"]["property"] == "reachable landed_and_flying"
    assert [s["#meta"]["label"] for s in witness["states"]] == [
        "initial", "sender.post(A)", "sender.post(B)", "receiver.land(A)"]
    assert doc["queries"][2]["trace"] is None


def test_query_option_stops_at_the_witness(in_root: Path) -> None:
    code, out, _ = run_cli("check", HANDOFF, "-q", "--query", "both_flying", "--json")
    doc = json.loads(out)
    assert (code, doc["verdict"], doc["query"]) == (0, "holds", "both_flying")
    assert [(q["name"], q["status"], q["events"]) for q in doc["queries"]] == [
        ("both_flying", "reachable", 2)]
    assert doc["stats"]["stored"] == 3  # initial, post(A), post(B): then it stops
    code, out, _ = run_cli("check", HANDOFF, "-q", "--query", "landed_unposted")
    assert code == 5
    assert out.splitlines()[1] == (
        "NEVER REACHABLE: landed_unposted: no reachable state satisfies `exists r: Req ."
        " phase[r] == landed and not posted[r]` (exploration complete)")
    code, _, err = run_cli("check", HANDOFF, "-q", "--query", "nope")
    assert code == 2
    assert err == ("--query: no query `reachable nope` in tests/queries/"
                   "handoff.kvr (it declares: both_flying, landed_and_flying,"
                   " landed_unposted)\n")


def test_limit_makes_queries_inconclusive(in_root: Path) -> None:
    code, out, _ = run_cli("check", HANDOFF, "-q", "--max-states", "4", "--json")
    doc = json.loads(out)
    assert (code, doc["verdict"]) == (3, "inconclusive")
    assert [(q["name"], q["status"], q["events"]) for q in doc["queries"]] == [
        ("both_flying", "reachable", 2), ("landed_and_flying", "inconclusive", None),
        ("landed_unposted", "inconclusive", None)]
    code, out, _ = run_cli("check", HANDOFF, "-q", "--max-states", "2",
                           "--query", "landed_unposted")
    assert code == 3
    assert out.splitlines()[1] == ("INCONCLUSIVE: state limit (2) reached;"
                                   " `reachable landed_unposted` not found in what was"
                                   " explored")


def test_witness_option_writes_the_witness(in_root: Path, tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    code, _, err = run_cli("check", HANDOFF, "-q", "--witness", "landed_and_flying",
                           "--trace", str(path))
    assert code == 5
    assert err == f"wrote {path}\n"
    data = json.loads(path.read_text())
    assert data["#meta"]["property"] == "reachable landed_and_flying"
    assert len(data["states"]) == 4
    code, _, err = run_cli("check", HANDOFF, "-q", "--witness", "landed_unposted",
                           "--trace", str(path))
    assert err == "no trace file: `reachable landed_unposted` has no witness\n"
    dot = tmp_path / "w.dot"
    code, _, err = run_cli("check", HANDOFF, "-q", "--query", "both_flying",
                           "--diagram", str(dot))
    assert (code, err) == (0, f"wrote {dot}\n")
    assert ("witness of reachable both_flying \u2014 reachable: `forall r: Req . phase[r] =="
            " flying` holds in the last state") in dot.read_text()
    code, _, err = run_cli("check", HANDOFF, "-q", "--query", "both_flying",
                           "--witness", "landed_unposted")
    assert (code, err) == (2, "--witness landed_unposted: with --query both_flying, only"
                              " `reachable both_flying` is checked\n")


def test_queries_follow_the_counterexample(in_root: Path, tmp_path: Path) -> None:
    spec = tmp_path / "m.kvr"
    spec.write_text("model m\nactor p\nvar n : 0..3 = 0\n"
                    "event p.inc() when n < 3 do n := n + 1\n"
                    "invariant small: n < 2\nreachable one: n == 1\n")
    code, out, _ = run_cli("check", str(spec), "-q")
    assert code == 1
    lines = out.splitlines()
    assert lines[1] == ("VIOLATED: small: the invariant does not hold: `n < 2` is false,"
                        " where n = 2")
    assert lines.index("shortest trace, 2 events:") < lines.index(
        "reachable one: REACHABLE: `n == 1`; shortest witness, 1 event:")


def test_a_violation_leaves_unfound_queries_inconclusive() -> None:
    spec = load_text(
        "model m\nactor p\nvar n : 0..3 = 0\n"
        "event p.inc() when n < 3 do n := n + 1\n"
        "invariant small: n < 2\n"
        "reachable one: n == 1\nreachable three: n == 3\n", "m.kvr")
    out = api.check(spec)
    assert (out.verdict, out.prop) == (api.VIOLATED, "small")
    assert [(q.name, q.status) for q in out.queries] == [
        ("one", REACHABLE), ("three", "inconclusive")]


def test_queries_do_not_change_vacuity() -> None:
    text = ("model m\nactor p\nvar n : 0..3 = 0\n"
            "event p.inc() when n < 3 do n := n + 1\n"
            "event p.never() when n > 5 do skip\n"
            "invariant ok: n <= 3\n")
    plain = api.check(load_text(text, "m.kvr"))
    queried = api.check(load_text(text + "reachable three: n == 3\n", "m.kvr"))
    assert plain.never_fired == queried.never_fired == ("p.never",)
    assert queried.verdict == api.HOLDS and queried.vacuous


# ---- differential: random models, random queries --------------------------------------------


def _value_text(ft: ir.FiniteType, v: int) -> str:
    return ft.show(v)


def _queries_for(spec: ir.Spec, r: random.Random, n: int) -> list[str]:
    """``n`` random symmetry-invariant queries over the variables of ``spec``: a
    conjunction of one to three cell tests under existential binders over the
    symmetric types (their values cannot be named)."""
    out: list[str] = []
    for k in range(n):
        binders: dict[str, str] = {}
        atoms: list[str] = []
        for _ in range(r.choice([1, 1, 2, 3])):
            var = r.choice(spec.vars)
            index: list[str] = []
            for ft in var.domain:
                if ft.symmetric:
                    name = f"q{len(binders)}"
                    binders[name] = ft.name
                    index.append(name)
                else:
                    index.append(_value_text(ft, r.choice(list(ft.values()))))
            cell = var.name + (f"[{', '.join(index)}]" if index else "")
            base = var.value.base
            if base.symmetric:
                if var.value.optional:
                    atoms.append(f"{cell} {r.choice(['==', '!='])} none")
                else:
                    name = f"q{len(binders)}"
                    binders[name] = base.name
                    atoms.append(f"{cell} == {name}")
                continue
            choices = [_value_text(base, v) for v in base.values()]
            if var.value.optional:
                choices.append("none")
            atoms.append(f"{cell} {r.choice(['==', '==', '!='])} {r.choice(choices)}")
        body = " and ".join(atoms)
        if binders:
            body = "exists " + ", ".join(f"{b}: {t}" for b, t in binders.items()) + " . " + body
        out.append(f"reachable rq{k}: {body}")
    return out


SEEDS = [pytest.param(s, marks=pytest.mark.slow) if s >= 25 or s == 1 else s
         for s in range(180)]
"""24 random models in the quick suite (seed 1, the largest of the first 25, with the
slow tests), 180 with the slow tests."""


@pytest.mark.parametrize("seed", SEEDS)
def test_queries_agree_with_reference(seed: int) -> None:
    base = model_for_seed(seed, extended=True)
    try:
        plain = load_text(base, "gen.kvr")
    except Exception:  # pragma: no cover - modelgen writes well-formed models
        pytest.skip("not a well-formed model")
    if not plain.vars:
        pytest.skip("no variables")
    queries = _queries_for(plain, random.Random(seed), 4)
    spec = load_text(base + "\n".join(queries) + "\n", "gen.kvr")
    model = SpecModel(spec)
    try:
        ref = reference_explore(InterpretedModel(spec, model.values), deadlock=False,
                                exhaustive=True, per_clock=True, max_states=20_000)
    except ValueError as err:
        pytest.skip(f"not an integer-time model: {err}")
    if ref.strict:
        pytest.skip("strict clock constraints: integer time differs from dense time")
    if ref.verdict == INCONCLUSIVE or MODEL_ERROR in ref.findings:
        pytest.skip("too large for the reference, or a model error")
    names = [q.name for q in spec.queries]
    for sym in (True, False):
        for name in names:
            res = explore(model, Limits(max_states=50_000),
                          Options(query=name, symmetry=sym, deadlock=False))
            assert res.verdict == "holds", (seed, name, res.verdict, res.message)
            (got,) = res.queries
            want = ref.queries.get(name)
            context = f"seed {seed}, symmetry {sym}, {name}:\n{base}"
            if want is None:
                assert got.status == UNREACHABLE, context
                continue
            assert got.status == REACHABLE, context
            assert len(got.trace) - 1 == want, context
            final = got.trace[-1].state
            match = [m for m in model.queries(final) if m.query == names.index(name)]
            assert match, context
            vals = replay(model, got.trace[0].state,
                          [s.edge for s in got.trace[1:] if s.edge is not None])[-1]
            sem = Semantics(model)
            assert any(sem.all_hold(p, v) for p in match[0].parts for v in vals), context
    # Without --query: every property is checked too, and a HOLDS decides every query.
    whole = explore(model, Limits(max_states=50_000), Options(deadlock=False))
    if whole.verdict == "holds":
        assert {q.name for q in whole.queries if q.status == REACHABLE} == set(ref.queries)

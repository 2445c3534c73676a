"""Unbounded liveness: ``P leadsto Q``, ``always eventually Q``, ``fair event``.

* ``tests/semantics/liveness/NAME.kvr``: each construct with its opposite, pinned
  by a ``# expect:`` line, the same from the compiled and the interpreted model,
  and against the brute-force integer-time reference (``tests/reference_live.py``);
* random models (``tests/livegen.py``) against the same reference;
* lassos that are real: the cycle returns to its first state, ``Q`` never holds
  after the trigger, the times satisfy every constraint;
* the classic models and the strict-release spec, pinned;
* the command line: exit codes, --no-liveness, --property, --json (schema),
  --workers refused, limits inconclusive, prove's ``covers:`` line.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from helpers import run_cli
from jsonschema import Draft202012Validator

from checker import api
from checker.algorithms.liveness import LiveReport, check_liveness
from checker.engines import Limits
from checker.language import load, load_text
from checker.model import trace as tr
from checker.model.compiled import SpecModel
from checker.model.interface import ModelRuntimeError
from checker.model.interp import InterpretedModel
from checker.model.timeline import TraceShape, timeline
from tests.livegen import live_model
from tests.reference import deadlocks_along
from tests.reference_live import reference_liveness

ROOT = Path(__file__).resolve().parent.parent
CASES = sorted((ROOT / "tests" / "semantics" / "liveness").glob("*.kvr"))
DOCS = ROOT / "docs" / "liveness"
SCHEMA = ROOT / "docs" / "schema" / "kvrace-output-1.schema.json"


def _expect(path: Path) -> tuple[str, str | None]:
    words = path.read_text().splitlines()[0].removeprefix("# expect:").split()
    return words[0], words[1] if len(words) > 1 else None


def _summary(run: api.LivenessRun) -> list[tuple[str, str, str | None, list[str]]]:
    return [(r.name, r.status, r.trace.lasso if r.trace else None,
             [s.label for s in r.trace.steps] if r.trace else []) for r in run.results]


def _engine_summary(report: LiveReport) -> list[tuple[str, str, str | None, list[str]]]:
    return [(r.name, str(r.status), str(r.lasso.kind) if r.lasso else None,
             [s.label for s in r.lasso.trace] if r.lasso else []) for r in report.results]


def _assert_real_lasso(model: SpecModel, out: api.LivenessOutcome) -> None:
    """The lasso is a run that breaks the property: ``Q`` fails from the trigger on,
    a cycle returns to its first state, and its times meet every constraint."""
    trace = out.trace
    assert trace is not None and trace.lasso is not None
    k = model.leadsto_names.index(out.name)
    states = _states(model, trace)
    trig = int(out.message.rsplit("step ", 1)[1].split()[0])
    assert model.leadsto(states[trig])[k][0]
    assert not any(model.leadsto(s)[k][1] for s in states[trig:])
    if trace.lasso == "cycle":
        assert trace.loop is not None and 1 <= trace.loop < len(states)
        assert states[trace.loop - 1] == states[-1]
        t = [s.time for s in trace.steps]
        assert all(x is not None for x in t)
        assert t[-1] > t[trace.loop - 1]  # a turn takes time: the run is not Zeno
    if trace.lasso == "idle":
        assert not model.deadlines(states[-1])


def _states(model: SpecModel, trace: tr.Trace) -> list[tuple[int, ...]]:
    """Replay a trace's event labels on the model: its discrete states."""
    s = model.initial_states()[0]
    out = [s]
    for step in trace.steps[1:]:
        edges = [e for e in model.edges(s) if model.event_names[e.event] == step.label]
        assert edges, f"{step.label} cannot fire in {model.describe(s)}"
        s = edges[0].target
        out.append(s)
    return out


# ---- the semantics cases ----------------------------------------------------------------------


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_semantics_case(path: Path) -> None:
    status, kind = _expect(path)
    spec = load(path)
    compiled = api.check_liveness(SpecModel(spec))
    interpreted = check_liveness(InterpretedModel(spec))
    assert _summary(compiled) == _engine_summary(interpreted)
    first = compiled.results[0]
    assert first.status == status, first.message
    assert (first.trace.lasso if first.trace else None) == kind
    if first.trace is not None:
        _assert_real_lasso(SpecModel(spec), first)
    ref = reference_liveness(InterpretedModel(spec))
    # inconclusive is never "holds": the reference must find a violation there.
    want = "holds" if status == "holds" else "violated"
    assert ref[first.name] == want


def test_every_construct_has_its_opposite() -> None:
    stems = {p.stem for p in CASES}
    for stem in stems:
        if stem.endswith("_off"):
            base = stem.removesuffix("_off")
            assert base in stems
            assert _expect(ROOT / "tests/semantics/liveness" / f"{base}.kvr")[0] != _expect(
                ROOT / "tests/semantics/liveness" / f"{stem}.kvr")[0]
    assert {"zeno_cycle_off", "fair_zeno_off", "deadlock", "deadline_forces_off",
            "urgent_location_off", "always_eventually_off"} <= stems


def test_lasso_text_and_itf_round_trip() -> None:
    spec = load(ROOT / "tests/semantics/liveness/zeno_cycle_off.kvr")
    run = api.check_liveness(SpecModel(spec))
    trace = run.results[0].trace
    assert trace is not None
    assert tr.lasso_text(trace) == "\n".join([
        "    0  t=0          initial state",
        "  --- cycle: steps 1..1 return to the state of step 0, 1 time units per turn ---",
        "    1  t=1       a  spin()",
        "  --- the cycle repeats for ever (the same delays every turn) ---",
    ])
    doc = tr.to_itf(trace)
    assert doc["loop"] == 0 and doc["lasso"] == {"kind": "cycle", "repeats_exactly": True}
    back = tr.from_itf(json.loads(json.dumps(doc)))
    assert (back.loop, back.lasso, back.repeats_exactly) == (1, "cycle", True)
    assert [s.time for s in back.steps] == [s.time for s in trace.steps]


# ---- random models against the brute-force reference ----------------------------------------


@pytest.mark.parametrize("seed", range(30))
def test_random_models_agree_with_the_reference(seed: int) -> None:
    _agree(seed, 20_000)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(30, 110))
def test_more_random_models_agree_with_the_reference(seed: int) -> None:
    _agree(seed, 400_000)


def _agree(seed: int, max_nodes: int) -> None:
    spec = load_text(live_model(seed), f"<live {seed}>")
    model = SpecModel(spec)
    run = api.check_liveness(model)
    try:
        ref = reference_liveness(InterpretedModel(spec), max_nodes=max_nodes)
    except OverflowError:
        pytest.skip("the integer-time reference has too many states for this seed")
    except Exception as exc:  # a model error reached by the reference
        assert run.error is not None, exc
        return
    assert run.error is None
    for r in run.results:
        if r.status == "violated" and ref[r.name] == "holds":
            # A dense-time deadlock may miss the integer grid: it must show on it finer.
            assert r.trace is not None and r.trace.lasso == "deadlock"
            edges = _edges(model, r.trace)
            assert deadlocks_along(model, model.initial_states()[0], edges, grid=4)
            continue
        assert ref[r.name] == ("holds" if r.status == "holds" else "violated"), r.name
        if r.trace is not None:
            _assert_real_lasso(model, r)


def _edges(model: SpecModel, trace: tr.Trace) -> list:  # type: ignore[type-arg]
    s = model.initial_states()[0]
    out = []
    for step in trace.steps[1:]:
        e = next(e for e in model.edges(s) if model.event_names[e.event] == step.label)
        out.append(e)
        s = e.target
    return out


@pytest.mark.parametrize("seed", range(0, 60, 3))
def test_compiled_and_interpreted_properties_agree(seed: int) -> None:
    """The oracle: P and Q, and the fair instances, state by state."""
    spec = load_text(live_model(seed), f"<live {seed}>")
    c, i = SpecModel(spec), InterpretedModel(spec)
    assert c.leadsto_names == i.leadsto_names and c.fair_events == i.fair_events
    from tests.reference import untimed_states

    for s in sorted(untimed_states(c)[0]):
        try:
            want = i.leadsto(s)
        except ModelRuntimeError:
            with pytest.raises(ModelRuntimeError):
                c.leadsto(s)
            continue
        assert c.leadsto(s) == want


def test_timing_of_a_lasso_meets_every_constraint() -> None:
    spec = load(DOCS / "fischer.kvr")
    model = SpecModel(spec)
    run = api.check_liveness(model, only="enters")
    out = run.results[0]
    assert out.trace is not None and out.trace.lasso == "cycle"
    edges = _edges(model, out.trace)
    states = [model.initial_states()[0], *(e.target for e in edges)]
    times = [s.time for s in out.trace.steps]
    reset_at: dict[int, object] = {}
    step = 0
    for op in timeline(model, TraceShape(states, edges)):
        name = type(op).__name__
        if name == "Elapse":
            step += 1
        elif name == "Reset":
            for c in op.clocks:  # type: ignore[union-attr]
                reset_at[c] = times[step]
        else:
            for a in op.atoms:  # type: ignore[union-attr]
                v = times[step] - reset_at.get(a.clock, 0)  # type: ignore[operator]
                b = model.bounds[a.bound].evaluate(model.values)
                assert {"<=": v <= b, "<": v < b, ">=": v >= b, ">": v > b}[a.op]


# ---- pinned results ---------------------------------------------------------------------------


def test_train_gate_every_approaching_train_crosses() -> None:
    classic = (ROOT / "spec/classic/train_gate.kvr").read_text()
    doc = (DOCS / "train_gate.kvr").read_text()
    assert doc.replace("model train_gate_liveness", "model train_gate").startswith(classic)
    run = api.check_liveness(SpecModel(load(DOCS / "train_gate.kvr")))
    assert [(r.name, r.status) for r in run.results] == [
        ("crosses[T1]", "holds"), ("crosses[T2]", "holds"), ("crosses[T3]", "holds")]
    # The three instances are one orbit: crosses[T1] is checked on the graph reduced by
    # the permutations fixing T1 (swapping T2 and T3): 48 zones.
    assert (run.zones, run.transitions) == (48, 71)
    full = api.check_liveness(SpecModel(load(DOCS / "train_gate.kvr")), symmetry=False)
    assert [(r.name, r.status) for r in full.results] == [
        (r.name, r.status) for r in run.results]
    assert (full.zones, full.transitions) == (91, 129)  # = safety without symmetry: 91 states


SYMMETRIC_STALL = """model stall
symmetric type T = {A, B, C, D}
actor a
var st : T -> 0..2 = 0
event a.start(t: T) when st[t] == 0 do st[t] := 1
event a.finish(t: T) when st[t] == 1 and forall u: T . u == t or st[u] != 1 do st[t] := 2
property done(t: T): st[t] == 1 leadsto st[t] == 2
property all_idle: always eventually forall t: T . st[t] != 1
"""
"""Each started value may wait for ever (another one started too, and nothing forces
either on): every instance is violated.  Reduced by every permutation, ``done[A]``
would be read on images where some other value is the started one, and hold."""


def test_a_reduction_keeps_the_value_its_instance_names() -> None:
    model = SpecModel(load_text(SYMMETRIC_STALL, "<stall>"))
    orbits = model.leadsto_orbits()
    # done[A] ... done[D] are one orbit, done[A] fixed by the permutations of B, C, D;
    # all_idle is fixed by every permutation (the identity is not listed).
    assert [k for k, _ in orbits] == [0, 0, 0, 0, 4]
    assert [len(f) for _, f in orbits] == [5, 5, 5, 5, 23]
    for sym in (True, False):
        run = api.check_liveness(model, symmetry=sym)
        assert [(r.name, r.status) for r in run.results] == [
            ("done[A]", "violated"), ("done[B]", "violated"), ("done[C]", "violated"),
            ("done[D]", "violated"), ("all_idle", "violated")], sym
        assert all(r.trace is not None for r in run.results)


def test_a_reduction_decides_what_holds_on_fewer_zones() -> None:
    text = SYMMETRIC_STALL.replace("event a.finish", "urgent event a.finish").replace(
        " and forall u: T . u == t or st[u] != 1", "")
    model = SpecModel(load_text(text, "<served>"))
    sym = api.check_liveness(model)
    full = api.check_liveness(model, symmetry=False)
    assert [r.status for r in sym.results] == [r.status for r in full.results] == ["holds"] * 5
    assert (sym.zones, full.zones) == (45, 81)  # 3 x C(5, 2) + C(6, 2) against 3^4


def test_train_gate_without_the_approach_deadline_fails() -> None:
    text = (DOCS / "train_gate.kvr").read_text().replace(
        "location approaching: x <= 20", "location approaching")
    run = api.check_liveness(SpecModel(load_text(text, "<tg>")))
    first = run.results[0]
    assert first.status == "violated" and first.trace is not None
    assert first.trace.lasso == "idle"


def test_fischer_needs_fairness_and_still_starves() -> None:
    plain = api.check_liveness(SpecModel(load(DOCS / "fischer.kvr")))
    assert {r.name: r.status for r in plain.results} == {
        "enters[P1]": "violated", "enters[P2]": "violated", "enters[P3]": "violated",
        "someone_enters": "violated"}
    fair = api.check_liveness(SpecModel(load(DOCS / "fischer_fair.kvr")))
    assert {r.name: r.status for r in fair.results} == {
        "enters[P1]": "violated", "enters[P2]": "violated", "enters[P3]": "violated",
        "someone_enters": "holds"}
    # Without fairness the reduced graphs (62 zones) are tried first and decide nothing:
    # every instance is violated, and its lasso needs the full graph (79 zones).  With
    # fairness there is no reduction.
    assert (plain.zones, fair.zones, plain.reduced, fair.reduced) == (141, 79, False, False)
    assert plain.reduced_zones == 62
    alone = api.check_liveness(SpecModel(load(DOCS / "fischer.kvr")), symmetry=False)
    assert (alone.zones, alone.reduced_zones) == (79, 0)
    for r in fair.results:
        if r.trace is not None:
            assert r.trace.lasso == "cycle"
            _assert_real_lasso(SpecModel(load(DOCS / "fischer_fair.kvr")), r)


def test_cli_says_how_symmetry_took_part(in_root: Path) -> None:
    shown = {f: run_cli("check", f"docs/liveness/{f}.kvr")[1] for f in ("fischer", "train_gate")}
    assert ("liveness: 141 zones, 339 transitions in" in shown["fischer"]
            and "(62 of the zones on graphs reduced by symmetry that decided nothing,"
                " equality store)" in shown["fischer"])
    assert "(symmetry reduction per instance, equality store)" in shown["train_gate"]
    out = run_cli("check", "docs/liveness/train_gate.kvr", "--no-symmetry")[1]
    assert "liveness: 91 zones" in out and "(no symmetry reduction, equality store)" in out


@pytest.mark.slow  # about a second: kept out of the quick subset
def test_strict_release_strands_the_slot_and_the_timer_frees_it() -> None:
    run = api.check_liveness(SpecModel(load(DOCS / "strict_release.kvr")))
    first = run.results[0]
    assert first.name == "released[A]" and first.status == "violated"
    assert first.trace is not None and first.trace.lasso == "idle"
    assert [s.label for s in first.trace.steps][-1] == "decode.ack_lost(A)"
    fixed = api.check_liveness(SpecModel(load(DOCS / "strict_release_timer.kvr")))
    assert fixed.verdict == "holds"
    assert api.check(load(DOCS / "strict_release_timer.kvr")).verdict == "holds"


CSMA_VERDICTS = {"bus_idles": "holds", "finishes[S1]": "holds", "finishes[S2]": "holds",
                 "finishes[S3]": "holds", "delivers[S1]": "violated",
                 "delivers[S2]": "violated", "delivers[S3]": "violated"}
BUSY_AGAIN = "  event busy_again from retrying to retrying receive busy do reset x\n"


@pytest.mark.slow
def test_csma_cd_the_bus_idles_but_a_station_may_starve() -> None:
    classic = (ROOT / "spec/classic/csma_cd.kvr").read_text()
    doc = (DOCS / "csma_cd.kvr").read_text()
    # The classic model, renamed, with one transition added (and its comment).
    unrepaired = re.sub(r"  # The repair:.*\n.*\n" + re.escape(BUSY_AGAIN), "", doc)
    assert unrepaired != doc
    assert classic[classic.index("model "):].replace(
        "model csma_cd\n", "model csma_cd_liveness\n") in unrepaired
    assert api.check(load(DOCS / "csma_cd.kvr")).verdict == "holds"
    model = SpecModel(load(DOCS / "csma_cd.kvr"))
    run = api.check_liveness(model)
    assert {r.name: r.status for r in run.results} == CSMA_VERDICTS
    assert (run.zones, run.transitions) == (14746, 48963)
    starved = next(r for r in run.results if r.name == "delivers[S1]")
    assert starved.trace is not None and starved.trace.lasso == "cycle"
    assert (starved.trace.loop, len(starved.trace.steps)) == (3, 42)
    _assert_real_lasso(model, starved)


@pytest.mark.slow
def test_csma_cd_without_the_repair_time_stops_and_fairness_changes_nothing() -> None:
    from checker.view.steps import Run

    doc = (DOCS / "csma_cd.kvr").read_text()
    unrepaired = doc.replace(BUSY_AGAIN, "")
    for text, end in ((unrepaired, tr.Fraction(78)), (doc, tr.Fraction(77 + 52))):
        # S1 begins at 0, the bus says busy at 26 and at 77: S2 and S3 back off.
        model = SpecModel(load_text(text, "<csma>"))
        walk = Run(model)
        for label, t in (("Node.start+Bus.grab(S1)", 0), ("Bus.signal_busy()", 26),
                         ("Bus.signal_busy()", 77)):
            move = next(c.index for c in walk.choices(len(walk) - 1)
                        if model.event_names[c.edge.event] == label)
            walk.fire(move, tr.Fraction(t))
        stay = walk.stay(len(walk) - 1)
        assert stay is not None and stay.hi == end
    old = api.check_liveness(SpecModel(load_text(unrepaired, "<csma>")))
    assert {r.name: r.status for r in old.results} == CSMA_VERDICTS
    assert old.zones == 7139
    fair = doc.replace("  event done from", "  fair event done from")
    assert fair != doc
    run = api.check_liveness(SpecModel(load_text(fair, "<csma>")))
    assert {r.name: r.status for r in run.results} == CSMA_VERDICTS
    assert run.zones == 14746


# ---- the command line ------------------------------------------------------------------------


def test_cli_check_liveness_exit_codes(in_root: Path) -> None:
    code, out, _ = run_cli("check", "docs/liveness/fischer_fair.kvr")
    assert code == 1
    assert out.splitlines()[1].startswith("VIOLATED: enters[P1]: the response never comes")
    assert "  someone_enters: holds" in out
    assert "--- the cycle repeats for ever" in out
    code, out, _ = run_cli("check", "docs/liveness/fischer_fair.kvr", "--no-liveness")
    assert code == 0 and "liveness (" not in out
    code, out, _ = run_cli("check", "docs/liveness/fischer_fair.kvr", "--property",
                           "someone_enters")
    assert code == 0 and "  someone_enters: holds" in out and "enters[P1]" not in out
    code, _, err = run_cli("check", "docs/liveness/fischer_fair.kvr", "--property", "nope")
    assert code == 2 and "no unbounded liveness property `nope`" in err


def test_cli_refuses_liveness_with_workers(in_root: Path) -> None:
    code, _, err = run_cli("check", "docs/liveness/train_gate.kvr", "--workers", "2")
    assert code == 2
    assert "--workers/--ray do not check unbounded liveness properties" in err
    assert "Traceback" not in err


def test_cli_limit_is_inconclusive_never_holds(in_root: Path) -> None:
    # Liveness on train-gate stores 48 zones with symmetry reduction, 91 without.
    code, out, _ = run_cli("check", "docs/liveness/train_gate.kvr", "--max-states", "40")
    assert code == 3
    assert out.splitlines()[1] == ("INCONCLUSIVE: crosses[T1]: state limit (40) reached;"
                                   " the safety properties hold (exploration complete)")
    code, out, _ = run_cli("check", "docs/liveness/train_gate.kvr", "--max-states", "49")
    assert code == 0 and out.splitlines()[1].startswith("HOLDS")
    code, out, _ = run_cli("check", "docs/liveness/train_gate.kvr", "--max-states", "90",
                           "--no-symmetry")
    assert code == 3 and "state limit (90) reached" in out.splitlines()[1]


def test_states_limit_is_the_whole_liveness_run() -> None:
    # The reduced graphs (62 zones) and the full one (79) count against one limit.
    model = SpecModel(load(DOCS / "fischer.kvr"))
    run = api.check_liveness(model, Limits(max_states=100))
    assert {r.status for r in run.results} == {"inconclusive"}
    assert api.check_liveness(model, Limits(max_states=142)).results[0].status == "violated"


def test_cli_json_liveness(in_root: Path, tmp_path: Path) -> None:
    validator = Draft202012Validator(json.loads(SCHEMA.read_text()))
    trace_file = tmp_path / "lasso.json"
    code, out, _ = run_cli("check", "docs/liveness/strict_release.kvr", "--json",
                           "--trace", str(trace_file))
    doc = json.loads(out)
    assert not [e.message for e in validator.iter_errors(doc)]
    assert code == 1 and doc["verdict"] == "violated"
    assert [(x["name"], x["status"]) for x in doc["liveness"]] == [
        ("released[A]", "violated"), ("released[B]", "violated")]
    assert doc["liveness"][0]["trace"]["lasso"]["kind"] == "idle"
    written = json.loads(trace_file.read_text())
    assert written["lasso"]["kind"] == "idle" and "loop" not in written
    code, out, _ = run_cli("check", "docs/liveness/fischer.kvr", "--json")
    doc = json.loads(out)
    assert not [e.message for e in validator.iter_errors(doc)]
    lasso = doc["liveness"][0]["trace"]
    assert lasso["lasso"]["kind"] == "cycle" and isinstance(lasso["loop"], int)


def test_prove_says_it_does_not_cover_liveness(in_root: Path) -> None:
    code, out, _ = run_cli("prove", "docs/liveness/train_gate.kvr", "--assume", "W >= 60")
    assert code == 0
    assert ("covers: every assert, invariant and bounded response, and deadlock freedom;"
            " not the unbounded liveness properties") in out


def test_limits_reach_the_engine() -> None:
    model = SpecModel(load(DOCS / "fischer.kvr"))
    run = api.check_liveness(model, Limits(max_states=30))
    assert run.verdict == "inconclusive" and run.limit is not None
    assert all(r.status == "inconclusive" for r in run.results)


def test_lasso_diagram() -> None:
    from checker.render import lasso_dot, sequence_dot

    fair = api.check_liveness(SpecModel(load(DOCS / "fischer_fair.kvr")), only="enters")
    trace = fair.results[0].trace
    assert trace is not None and trace.loop == 2
    dot = lasso_dot(trace)
    assert dot.startswith(sequence_dot(trace).rstrip("\n")[:-1])
    assert "T_8 -> T_2 [color=\"#6a1b9a\"" in dot  # the back arrow: last row to the first
    assert "repeats for ever, same delays" in dot and "back to #2" in dot
    idle = api.check_liveness(SpecModel(load(DOCS / "strict_release.kvr"))).results[0].trace
    assert idle is not None and "waits for ever: no deadline" in lasso_dot(idle)
    finite = dataclasses.replace(trace, lasso=None, loop=None)
    assert lasso_dot(finite) == sequence_dot(finite)


def test_notebook_repr_of_a_lasso() -> None:
    run = api.check_liveness(SpecModel(load(DOCS / "strict_release.kvr")))
    trace = run.results[0].trace
    assert trace is not None
    assert repr(trace).endswith(", lasso: idle>")
    assert "then nothing happens for ever" in trace._repr_html_()


def _symmetric_agree(seeds: range) -> tuple[int, int]:
    """Liveness with and without the symmetry reduction on the random models of
    ``seeds`` that have symmetries and no fairness: the same status for every instance
    (a reduced graph that said *holds* wrongly would show here).  Returns how many
    models were compared and on how many the reduction decided something."""
    compared = reduced = 0
    for seed in seeds:
        spec = load_text(live_model(seed), f"<live {seed}>")
        model = SpecModel(spec)
        if not model.leadsto_orbits() or model.fair_events:
            continue
        on = api.check_liveness(model, timestamps=False)
        off = api.check_liveness(SpecModel(spec), timestamps=False, symmetry=False)
        assert (on.error, [(r.name, r.status) for r in on.results]) == (
            off.error, [(r.name, r.status) for r in off.results]), seed
        compared += 1
        reduced += on.zones != off.zones
    return compared, reduced


def test_a_model_error_on_a_reduced_graph_is_reported_as_the_run_meets_it() -> None:
    # Random model 788: an event faults; the reduced graph meets the fault in a permuted
    # state (e2 of p1), the run itself in e2 of p0.
    spec = load_text(live_model(788), "<live 788>")
    on = api.check_liveness(SpecModel(spec), timestamps=False)
    off = api.check_liveness(SpecModel(spec), timestamps=False, symmetry=False)
    assert on.error == off.error == "a0.e2(p0): value 2 outside 0..1 at <live 788>:25:15"


def test_symmetry_leaves_random_liveness_verdicts_unchanged() -> None:
    compared, reduced = _symmetric_agree(range(0, 30))
    assert (compared, reduced) == (9, 2)


@pytest.mark.slow
def test_symmetry_leaves_more_random_liveness_verdicts_unchanged() -> None:
    compared, reduced = _symmetric_agree(range(30, 400))
    assert (compared, reduced) == (125, 30)


def readme_liveness_table() -> list[list[int]]:
    """The zone counts of the README's train-gate cost table: per row, the trains,
    then safety with and without symmetry, then liveness with and without."""
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    start = text.index("| trains | safety zones (symmetry)")
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip().replace(",", "") for c in line.strip("|").split("|")]
        rows.append([int(cells[k]) for k in (0, 1, 3, 5, 7)])
    return rows


@pytest.mark.slow  # 5 trains without symmetry: 5,181 zones
def test_readme_liveness_table_is_current() -> None:
    from benchmarks.bench import liveness_train_gate

    table = readme_liveness_table()
    assert [r[0] for r in table] == [3, 4, 5]
    got = [[r["trains"], r["safety"]["zones"], r["safety_nosym"]["zones"],
            r["liveness"]["zones"], r["liveness_nosym"]["zones"]]
           for r in liveness_train_gate([3, 4, 5])]
    assert got == table
    assert {r["liveness"]["verdict"] for r in liveness_train_gate([3])} == {"holds"}

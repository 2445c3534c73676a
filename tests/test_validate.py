"""``kvrace validate``: logs of simulated runs conform, mutated ones deviate where the
model says, hand-written logs are rejected at a known line, bad input is exit 2."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import ROOT, run_cli

from checker.language import load
from checker.model.compiled import SpecModel
from checker.validate import conform, simlog
from checker.validate.log import read_json_lines

IMMEDIATE = "spec/sglang/immediate_release.kvr"
DEFERRED = "spec/sglang/deferred_release.kvr"
LOGS = "tests/data/logs"
MICRO = Fraction(1, 10**6)
"""The clock error of a simulated log: its times are rounded to the microsecond."""


def model_of(path: str) -> SpecModel:
    return SpecModel(load(str(ROOT / path)), {})


def every_event(model: SpecModel) -> frozenset[str]:
    return frozenset(conform.EventIndex(model).names())


def validate_lines(model: SpecModel, lines: list[str],
                   observable: frozenset[str] | None = None,
                   clock_error: Fraction = MICRO) -> conform.Report:
    mon = conform.Monitor(model, "sim.jsonl", observable or every_event(model),
                          clock_error=clock_error)
    return conform.validate(mon, read_json_lines("sim.jsonl", lines))


def as_lines(model: SpecModel, events: list[tuple[int, Fraction]]) -> list[str]:
    return [simlog.log_line(model, e, t) for e, t in events]


# ---- simulated runs ---------------------------------------------------------------------

@pytest.mark.parametrize("spec", [IMMEDIATE, DEFERRED])
def test_every_simulated_run_conforms_and_agrees_on_violations(spec: str) -> None:
    model = model_of(spec)
    violating = 0
    for run in simlog.simulated_runs(model, 7, 40):
        events = simlog.run_lines(model, run)
        rep = validate_lines(model, as_lines(model, events))
        assert rep.outcome is conform.Outcome.CONFORMS, (run.index, rep.deviation)
        assert rep.matched == len(events)
        if run.end == "violation":
            violating += 1
            # The simulator stops at the failing write; the log's last line is it.
            assert rep.broken is not None and rep.certainty is conform.Certainty.CERTAIN
            assert rep.broken.line == len(events)
            assert rep.broken.property.startswith("assert in decode.land(")
        else:
            assert rep.broken is None
    # `check`: immediate release leaks, deferred release (T_hold = 8) does not.
    assert (violating > 0) == (spec == IMMEDIATE)


def test_a_log_of_many_runs_conforms() -> None:
    model = model_of(IMMEDIATE)
    lines = list(simlog.simulated_log(model, 3, 300))
    rep = validate_lines(model, lines)
    assert rep.outcome is conform.Outcome.CONFORMS
    assert rep.runs == sum(1 for line in lines if line.startswith('{"run"')) + 1
    assert rep.observations == sum(1 for line in lines if line.startswith('{"t"')) >= 300


def _deferred_runs(count: int) -> list[list[tuple[int, Fraction]]]:
    model = model_of(DEFERRED)
    return [simlog.run_lines(model, r) for r in simlog.simulated_runs(model, 11, count)]


def test_removing_the_first_allocation_deviates_at_once() -> None:
    model = model_of(DEFERRED)
    for events in _deferred_runs(10):
        rep = validate_lines(model, as_lines(model, events[1:]))
        assert rep.outcome is conform.Outcome.DEVIATES
        assert rep.deviation is not None and rep.deviation.line == 1
        assert rep.deviation.matched == 0


def test_removing_a_learned_abort_deviates_once_its_deadline_passed() -> None:
    """``learn_abort(r)`` must happen within T_prop = 2 of ``abort(r)``: without it the
    first line later than that deviates (and nothing before it does)."""
    model = model_of(DEFERRED)
    names = model.event_names
    checked = 0
    for events in _deferred_runs(30):
        labels = [names[e] for e, _ in events]
        if "prefill.learn_abort(A)" not in labels:
            continue
        k = labels.index("prefill.learn_abort(A)")
        t_abort = events[labels.index("router.abort(A)")][1]
        cut = events[:k] + events[k + 1:]
        late = [i for i, (_, t) in enumerate(cut, 1) if t > t_abort + 2 + 2 * MICRO]
        rep = validate_lines(model, as_lines(model, cut))
        if not late:
            assert rep.outcome is conform.Outcome.CONFORMS
            continue
        assert rep.outcome is conform.Outcome.DEVIATES
        assert rep.deviation is not None and rep.deviation.line == late[0]
        assert rep.deviation.matched == late[0] - 1
        checked += 1
    assert checked >= 5


def test_a_write_landing_past_its_flight_bound_deviates() -> None:
    """Move ``land(r, k)`` to 0.01 s past ``post(r, k) + T_flight``: the first line later
    than the bound deviates (the land itself, if nothing else comes first)."""
    model = model_of(DEFERRED)
    names = model.event_names
    checked = 0
    for events in _deferred_runs(20):
        labels = [names[e] for e, _ in events]
        k = labels.index("decode.land(A, 0)")
        t_post = events[labels.index("prefill.post(A, 0)")][1]
        bound = t_post + 3
        moved = (events[k][0], bound + Fraction(1, 100))
        rest = events[:k] + events[k + 1:]
        mutated = sorted([*rest, moved], key=lambda x: x[1])
        expected = next(i for i, (_, t) in enumerate(mutated, 1) if t > bound + 2 * MICRO)
        rep = validate_lines(model, as_lines(model, mutated))
        assert rep.outcome is conform.Outcome.DEVIATES
        assert rep.deviation is not None and rep.deviation.line == expected
        checked += 1
    assert checked == 20


def test_an_early_release_deviates_at_its_line() -> None:
    """``release(r)`` needs ``since_abort[r] >= T_hold = 8``: moved to 1 s before that, it
    is its own line that deviates."""
    model = model_of(DEFERRED)
    names = model.event_names
    for events in _deferred_runs(10):
        labels = [names[e] for e, _ in events]
        if "decode.release(A)" not in labels:
            continue
        k = labels.index("decode.release(A)")
        t_abort = events[labels.index("router.abort(A)")][1]
        moved = (events[k][0], t_abort + 7)
        mutated = sorted([*events[:k], moved], key=lambda x: x[1])
        rep = validate_lines(model, as_lines(model, mutated))
        assert rep.outcome is conform.Outcome.DEVIATES
        assert rep.deviation is not None
        assert rep.deviation.line == mutated.index(moved) + 1
        assert names[moved[0]] == rep.deviation.observation.show()


def test_unobserved_events_may_happen_between_lines() -> None:
    """Drop every ``learn_abort``: with it unobservable (the default: the log never
    names it) every simulated run still conforms; declared observable, most deviate."""
    model = model_of(DEFERRED)
    names = model.event_names
    observable = every_event(model)
    deviating = 0
    for events in _deferred_runs(15):
        cut = [(e, t) for e, t in events if not names[e].startswith("prefill.learn_abort")]
        hidden = observable - {"prefill.learn_abort"}
        assert validate_lines(model, as_lines(model, cut), hidden).outcome \
            is conform.Outcome.CONFORMS
        if validate_lines(model, as_lines(model, cut), observable).outcome \
                is conform.Outcome.DEVIATES:
            deviating += 1
    assert deviating >= 10


def test_the_tracked_set_stays_small_on_a_long_log() -> None:
    model = model_of(IMMEDIATE)
    rep = validate_lines(model, list(simlog.simulated_log(model, 5, 2000)))
    assert rep.outcome is conform.Outcome.CONFORMS
    assert rep.max_states == 1  # every event observed: one zone per line


# ---- hand-written logs, on the command line ---------------------------------------------

def cli(*argv: str) -> tuple[int, str, str]:
    return run_cli("validate", *argv)


def test_a_release_earlier_than_its_guard_is_rejected() -> None:
    code, out, _ = cli(DEFERRED, f"{LOGS}/deferred_early_release.jsonl")
    assert code == 6
    assert out.splitlines()[0] == (
        "DEVIATES at tests/data/logs/deferred_early_release.jsonl:7: `decode.release(A)`"
        " at t=6 is not possible here; possible next events were `prefill.post(A, 1)` at"
        " t in [2.5, 4.5], `decode.release(A)` from t=9; the longest matching prefix ends"
        " at line 6")
    code, out, _ = cli(DEFERRED, f"{LOGS}/deferred_release_ok.jsonl")
    assert code == 0 and out.startswith("CONFORMS: the 7 events of")


def test_an_event_of_a_request_never_allocated_is_rejected() -> None:
    code, out, _ = cli(DEFERRED, f"{LOGS}/never_allocated.jsonl")
    assert code == 6
    # Only allocate and post are observable: B can be allocated once A's abort and the
    # hold of T_hold = 8 passed unobserved.
    assert out.splitlines()[0] == (
        "DEVIATES at tests/data/logs/never_allocated.jsonl:3: `prefill.post(B, 0)` at t=0.4"
        " is not possible here; possible next events were `prefill.post(A, 0)` from t=0,"
        " `decode.allocate(B, s0)` from t=8; the longest matching prefix ends at line 2")


def test_a_timestamp_outside_the_uncertainty_is_rejected() -> None:
    code, out, _ = cli(DEFERRED, f"{LOGS}/outside_uncertainty.jsonl", "--clock-error", "0.05")
    assert code == 6
    assert "outside_uncertainty.jsonl:5: `decode.land(A, 0)` at t=4.2" in out
    assert "`decode.land(A, 0)` at t in [0.95, 4.05]" in out
    code, out, _ = cli(DEFERRED, f"{LOGS}/outside_uncertainty.jsonl", "--clock-error", "0.1")
    assert code == 0, out


def test_a_log_with_the_race_conforms_and_says_so(tmp_path: Path) -> None:
    diagram = tmp_path / "race.dot"
    code, out, err = cli(IMMEDIATE, f"{LOGS}/immediate_race.jsonl", "--diagram", str(diagram))
    assert code == 1
    assert out.splitlines()[1] == (
        "VIOLATED: this log contains a violation of assert in decode.land(A, 0) at"
        " tests/data/logs/immediate_race.jsonl:8: write of A chunk 0 lands in slot s0 owned"
        " by B")
    dot = diagram.read_text(encoding="utf-8")
    assert "lands in slot s0 owned by B" in dot and "t=1.3" in dot
    assert "wrote" in err
    # Deferred release has no such run: the same log deviates where A's slot is freed.
    code, out, _ = cli(DEFERRED, f"{LOGS}/immediate_race.jsonl")
    assert code == 6 and out.startswith(
        "DEVIATES at tests/data/logs/immediate_race.jsonl:6: `decode.release(A)` at t=1 ")


@pytest.mark.parametrize(("log", "message"), [
    ("time_backwards.jsonl", "time_backwards.jsonl:2: error: time goes backwards: t=0.5 is"
     " before the previous line's t=1 by more than the clock error (0 for two timestamps)"),
    ("malformed.jsonl", "malformed.jsonl:2: error: not a JSON object: Expecting ','"
     " delimiter"),
    ("unknown_event.jsonl", "unknown_event.jsonl:2: error: unknown event `prefill.psot`: the"
     " spec declares no such event; did you mean `prefill.post`?"),
])
def test_bad_logs_are_positioned_errors(log: str, message: str) -> None:
    code, out, err = cli(DEFERRED, f"{LOGS}/{log}")
    assert code == 2 and out == ""
    assert err == f"{LOGS}/{message}\n"


def test_bad_values_and_times(tmp_path: Path) -> None:
    log = tmp_path / "x.jsonl"
    cases = [
        ('{"t": 0, "event": "decode.allocate", "args": {"r": "C"}}',
         "`C` is not a value of parameter `r` of `decode.allocate` (its values: A, B)"),
        ('{"t": 0, "event": "decode.allocate", "args": {"q": "A"}}',
         "`decode.allocate` has no parameter `q` (its parameters: r, s)"),
        ('{"t": "soon", "event": "decode.allocate"}', "timestamp `t` is not a number"),
        ('[1, 2]', "not a JSON object"),
        ('{"t": 1, "event": "decode.allocate", "extra": 1}', "unknown field `extra`"),
        ('{"t": 1e300000, "event": "decode.allocate"}', "timestamp `t` is not a number"),
        ('{"t": NaN, "event": "decode.allocate"}', "timestamp `t` is not a number: nan"),
        ('{"t": "-Infinity", "event": "decode.allocate"}', "timestamp `t` is not a number"),
        ('{"t": 1, "t": 2, "event": "decode.allocate"}', "the key `t` appears twice"),
        ('{"t": 1, "event": "decode.allocate", "args": {"r": "A", "r": "B"}}',
         "the key `r` appears twice"),
        ('{"run": 2, "t": 5, "x": 1}', "unknown field `x` (a run line has run, an optional"),
        ('{"t": 1, "event": "decode.allocate", "args": ' + "[" * 100000 + "]" * 100000 + "}",
         "not a JSON object: nested too deeply"),
        ('{"t": 0, "event": "decode.allocate", "args": {"r": "' + "A" * 10**6 + '"}}',
         "is not a value of parameter `r`"),
        ('{"t": 0, "event": "decode.allocate", "args": {"r": "' + "A" * (1 << 20) + '"}}',
         "the line is longer than 1,048,576 characters"),
        ("\x00\xff garbage", "not a JSON object"),
    ]
    for text, message in cases:
        log.write_text(text + "\n", encoding="utf-8")
        code, out, err = cli(DEFERRED, str(log))
        assert code == 2, (text[:200], out, err)
        assert err.startswith(f"{log}:1: error: ") and message in err, err[:300]
        assert len(err) < 400, err[:300]  # a value from the log is quoted cut short
    code, _, err = cli(DEFERRED, str(tmp_path / "missing.jsonl"))
    assert code == 2 and "cannot read" in err
    code, _, err = cli(DEFERRED, f"{LOGS}/deferred_release_ok.jsonl", "--observable", "decode.x")
    assert code == 2 and "unknown event `decode.x`" in err
    code, _, err = cli(DEFERRED, f"{LOGS}/deferred_release_ok.jsonl", "--clock-error", "-1")
    assert code == 2 and "--clock-error" in err


def test_an_event_not_declared_observable_is_refused() -> None:
    code, _, err = cli(DEFERRED, f"{LOGS}/deferred_release_ok.jsonl",
                       "--observable", "decode.allocate")
    assert code == 2
    assert ("deferred_release_ok.jsonl:3: error: `prefill.post(A, 0)` is not declared"
            " observable") in err


def test_json_output(tmp_path: Path) -> None:
    code, out, _ = cli(DEFERRED, f"{LOGS}/deferred_early_release.jsonl", "--json")
    doc = json.loads(out)
    assert code == 6 and doc["verdict"] == "deviates" and doc["conformance"] == "deviates"
    assert doc["deviation"]["line"] == 7 and doc["matched_until"] == 6
    assert doc["deviation"]["possible"] == [
        {"event": "prefill.post(A, 1)", "earliest": "2.5", "latest": "4.5"},
        {"event": "decode.release(A)", "earliest": "9", "latest": None}]
    code, out, _ = cli(IMMEDIATE, f"{LOGS}/immediate_race.jsonl", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["verdict"] == "violated" and doc["conformance"] == "conforms"
    assert doc["violation"] == {
        "line": 8, "property": "assert in decode.land(A, 0)", "property_kind": "assert",
        "message": "write of A chunk 0 lands in slot s0 owned by B",
        "event": "decode.land(A, 0)", "certainty": "certain"}


def test_output_is_deterministic() -> None:
    a = cli(DEFERRED, f"{LOGS}/never_allocated.jsonl")
    b = cli(DEFERRED, f"{LOGS}/never_allocated.jsonl")
    assert a == b


def test_a_timeout_is_inconclusive(tmp_path: Path) -> None:
    model = model_of(IMMEDIATE)
    log = tmp_path / "long.jsonl"
    log.write_text("\n".join(simlog.simulated_log(model, 1, 3000)) + "\n", encoding="utf-8")
    code, out, _ = cli(IMMEDIATE, str(log), "--timeout", "0.05", "--clock-error", "0.000001")
    assert code == 3
    assert out.startswith("INCONCLUSIVE: time limit (0.05 s) reached; ")


def test_logs_follow_the_log_schema() -> None:
    from jsonschema import Draft202012Validator

    schema = json.loads((ROOT / "docs" / "schema" / "kvrace-log-1.schema.json").read_text(
        encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    check = Draft202012Validator(schema)
    model = model_of(IMMEDIATE)
    lines = list(simlog.simulated_log(model, 2, 100))
    for path in sorted((ROOT / LOGS).glob("*.jsonl")):
        if path.stem in ("malformed", "time_backwards", "unknown_event"):
            continue
        lines += [t for t in path.read_text(encoding="utf-8").splitlines()
                  if t.strip() and not t.startswith("#")]
    for text in lines:
        assert not list(check.iter_errors(json.loads(text))), text
    assert not list(check.iter_errors({"t": 63, "note": "kept until then"}))
    bad = [{"t": 1, "args": {}}, {"t": "soon"}, {"event": "a.b"}, {"t": 1, "event": "nodot"},
           {"t": 1, "event": "a.b", "extra": 1}, {"run": 1, "t": 2, "extra": 1}]
    for doc in bad:
        assert list(check.iter_errors(doc)), doc


def test_a_state_limit_is_inconclusive() -> None:
    """``--max-states``: the most symbolic states tracked at once (the unobserved
    allocation, abort and posts before line 7 need more than 10, fewer than 40)."""
    log = f"{LOGS}/sglang_35049_on.jsonl"
    code, out, _ = cli(DEFERRED, log, "--max-states", "40", "-p", "T_flight=7")
    assert code == 0
    code, out, _ = cli(DEFERRED, log, "--max-states", "10", "-p", "T_flight=7")
    assert code == 3
    assert out == ("INCONCLUSIVE: state limit (10) reached; before any line of"
                   " tests/data/logs/sglang_35049_on.jsonl was matched\n")


def test_every_run_of_a_log_starts_where_it_says(tmp_path: Path) -> None:
    """A ``run`` line restarts the model: at its ``t``, or relative to its first line
    with ``--start first-...``, or at ``--start``."""
    log = tmp_path / "runs.jsonl"
    log.write_text(
        '{"t": 10, "event": "decode.allocate", "args": {"r": "A", "s": "s0"}}\n'
        '{"t": 10.5, "event": "prefill.post", "args": {"r": "A", "k": 0}}\n'
        '{"run": 2}\n'
        '{"t": 50, "event": "decode.allocate", "args": {"r": "A", "s": "s0"}}\n'
        '{"t": 50.5, "event": "prefill.post", "args": {"r": "A", "k": 0}}\n',
        encoding="utf-8")
    code, out, _ = cli(DEFERRED, str(log), "--start", "first-1:first")
    assert code == 0
    assert out.startswith(f"CONFORMS: the 4 events of {log} in 2 runs are runs of the spec")
    # From 0 (the default), A's allocation at t=50 is possible too: nothing bounds it.
    code, _, _ = cli(DEFERRED, str(log))
    assert code == 0
    # A run line's own start after its first event: that event is before the run.
    log.write_text(log.read_text(encoding="utf-8").replace('{"run": 2}',
                                                           '{"run": 2, "t": 60}'),
                   encoding="utf-8")
    code, _, err = cli(DEFERRED, str(log))
    assert code == 2 and "is before the run's start (t=60)" in err


def test_a_diagram_of_a_deviating_log_draws_the_matched_prefix(tmp_path: Path) -> None:
    diagram = tmp_path / "dev.dot"
    code, _, err = cli(DEFERRED, f"{LOGS}/deferred_early_release.jsonl", "--diagram",
                       str(diagram))
    assert code == 6 and "wrote" in err
    dot = diagram.read_text(encoding="utf-8")
    assert ("the log deviates at line 7: decode.release(A) at t=6 is not possible after"
            " this run") in dot
    assert "learn_abort(A)" in dot and "t=2.5" in dot


def test_a_skewed_clock_is_an_unknown_offset() -> None:
    """decode's lines stamped 0.3 s ahead: the release is 0.3 s after the abort it must
    coincide with.  ``--skew decode=0.3`` explains it; 0.2 does not."""
    log = f"{LOGS}/immediate_race_skewed.jsonl"
    code, out, _ = cli(IMMEDIATE, log)
    assert code == 6 and out.startswith(
        "DEVIATES at tests/data/logs/immediate_race_skewed.jsonl:5: `decode.release(A)` at"
        " t=1.3 is not possible here;")
    code, out, _ = cli(IMMEDIATE, log, "--skew", "decode=0.3")
    assert code == 1 and "VIOLATED: this log contains a violation of assert in" in out
    code, _, _ = cli(IMMEDIATE, log, "--skew", "decode=0.2")
    assert code == 6
    code, _, err = cli(IMMEDIATE, log, "--skew", "decoder=0.2")
    assert code == 2 and "no actor `decoder`; did you mean `decode`?" in err


def test_actors_on_one_machine_share_a_clock_domain() -> None:
    """decode's lines 0.3 s ahead of the others: with router on decode's machine
    (``decode+router``, one offset for both) the abort is 0.3 s before the release
    again, which immediate release does not allow; on its own clock it may be 0.3 s
    behind, and the log conforms."""
    log = f"{LOGS}/immediate_race_skewed.jsonl"
    code, out, _ = cli(IMMEDIATE, log, "--skew", "decode+router=0.3")
    assert code == 6 and out.startswith(
        "DEVIATES at tests/data/logs/immediate_race_skewed.jsonl:5: `decode.release(A)` at"
        " t=1.3 is not possible here;")
    code, _, _ = cli(IMMEDIATE, log, "--skew", "decode=0.3", "--skew", "router=0.3")
    assert code == 1
    code, _, _ = cli(IMMEDIATE, log, "--skew", "decode+router=0.3", "--skew", "prefill=0.3")
    assert code == 6  # one clock for both: whatever the others', 0.3 s apart
    code, _, err = cli(IMMEDIATE, log, "--skew", "decode+router=0.3", "--skew", "router=0.1")
    assert code == 2 and "`router` is in two clock domains" in err


@pytest.mark.parametrize("spec", [IMMEDIATE, DEFERRED])
def test_shifting_one_actor_within_its_skew_keeps_a_run_a_run(spec: str) -> None:
    """Metamorphic: every line of one actor moved by the same offset, declared as that
    actor's skew, leaves a simulated run conforming (and its verdict on properties)."""
    model = model_of(spec)
    offsets = [Fraction(-1, 2), Fraction(7, 10), Fraction(3)]
    for i, run in enumerate(simlog.simulated_runs(model, 17, 12)):
        events = simlog.run_lines(model, run)
        actor = ["decode", "prefill", "router"][i % 3]
        off = offsets[i % 3]
        moved = [(e, t + off if model.instance(e)[0].actor == actor else t)
                 for e, t in events]
        lines = [simlog.log_line(model, e, t) for e, t in moved]
        mon = conform.Monitor(model, "x", every_event(model), clock_error=MICRO,
                              skew={actor: abs(off)})
        rep = conform.validate(mon, read_json_lines("x", lines))
        assert rep.outcome is conform.Outcome.CONFORMS, (i, actor, rep.deviation)
        plain = validate_lines(model, as_lines(model, events))
        assert (rep.broken is None) == (plain.broken is None)
        # Two actors moved together are one clock domain: declared as such, a run.
        pair = (actor, ["decode", "prefill", "router"][(i + 1) % 3])
        both = [simlog.log_line(model, e, t + off if model.instance(e)[0].actor in pair
                                else t) for e, t in events]
        mon = conform.Monitor(model, "x", every_event(model), clock_error=MICRO,
                              skew={"+".join(pair): abs(off)})
        assert conform.validate(mon, read_json_lines("x", both)).outcome \
            is conform.Outcome.CONFORMS, (i, pair)


STRICT = "spec/sglang/strict_no_release_on_timeout.kvr"


@pytest.mark.parametrize(("argv", "code", "second"), [
    (["-p", "T_bound=3"], 0, "  6 lines, 5 events,"),
    (["-p", "T_bound=3.5", "--clock-error", "0.2"], 0, "  6 lines, 5 events,"),
    (["-p", "T_bound=2.5"], 1, "VIOLATED: this log contains a violation of property"
     " bounded_release[A] at tests/data/logs/bounded_release.jsonl:6 (overdue when"
     " decode.ack_arrives(A) fired): no response within T_bound"),
    (["-p", "T_bound=3", "--clock-error", "0.1"], 0, "warning: some runs consistent with"
     " this log break property bounded_release[A] at tests/data/logs/bounded_release.jsonl:6"
     " (overdue when decode.ack_arrives(A) fired): no response within T_bound; others do"
     " not"),
])
def test_a_bounded_response_is_judged_when_its_run_leaves_the_state(
        argv: list[str], code: int, second: str) -> None:
    """The slot is freed 3 s after the abort: within a bound of 3 or 3.5 (a response
    pending when a line is read is not broken yet), past 2.5 surely, and past 3 for some
    runs only when each time may be 0.1 s off (the gap is then in [2.8, 3.2])."""
    got, out, _ = cli(STRICT, f"{LOGS}/bounded_release.jsonl", *argv)
    assert got == code, out
    assert out.splitlines()[1].startswith(second), out


def test_a_violation_in_an_earlier_run_is_kept(tmp_path: Path) -> None:
    """A log of two runs: the race in the first, a clean allocation in the second."""
    log = tmp_path / "two.jsonl"
    race = (ROOT / LOGS / "immediate_race.jsonl").read_text(encoding="utf-8")
    log.write_text(race + '{"run": 2, "t": 100}\n{"t": 101, "event": "decode.allocate",'
                   ' "args": {"r": "A", "s": "s0"}}\n', encoding="utf-8")
    code, out, _ = cli(IMMEDIATE, str(log))
    assert code == 1
    assert out.splitlines()[1] == (
        f"VIOLATED: this log contains a violation of assert in decode.land(A, 0) at {log}:8:"
        " write of A chunk 0 lands in slot s0 owned by B")
    # A long simulated log of many runs: the first that ends in the race, at its last line.
    model = model_of(IMMEDIATE)
    lines = list(simlog.simulated_log(model, 3, 300))
    rep = validate_lines(model, lines)
    assert rep.broken is not None and rep.certainty is conform.Certainty.CERTAIN
    first = next(run.index for run in simlog.simulated_runs(model, 3, 100)
                 if run.end == "violation")
    breaks = [i for i, text in enumerate(lines, 1) if text.startswith('{"run"')]
    assert rep.broken.line == breaks[first] - 1
    assert rep.broken.property.startswith("assert in decode.land(")


def test_a_line_with_a_time_only_lets_time_pass(tmp_path: Path) -> None:
    """``{"t": 63}``: the log was kept until t=63 with no observable event.  A's ack is
    lost and its slot never freed: past ``T_bound = 60`` after the abort (t=1) that is a
    violation; at 62 it is not overdue yet.  An observable event the spec forces before
    such a line makes the log deviate there."""
    log = f"{LOGS}/bounded_release_lost.jsonl"
    code, out, _ = cli(STRICT, log)
    assert code == 1 and out.splitlines()[1].startswith(
        "VIOLATED: this log contains a violation of property bounded_release[A] at"
        " tests/data/logs/bounded_release_lost.jsonl:8 ")
    code, out, _ = cli(STRICT, log, "-p", "T_bound=62")
    assert code == 0 and len(out.splitlines()) == 2, out
    # Without the last line the log says nothing of what came after the lost ack.
    short = tmp_path / "short.jsonl"
    short.write_text("\n".join((ROOT / log).read_text(encoding="utf-8").splitlines()[:-1])
                     + "\n", encoding="utf-8")
    code, out, _ = cli(STRICT, str(short))
    assert code == 0 and len(out.splitlines()) == 2, out
    posted = tmp_path / "posted.jsonl"
    posted.write_text('{"t": 0, "event": "decode.allocate", "args": {"r": "A", "s": "s0"}}\n'
                      '{"t": 1, "event": "prefill.post", "args": {"r": "A", "k": 0}}\n'
                      '{"t": 10, "note": "nothing until then"}\n', encoding="utf-8")
    code, out, _ = cli(DEFERRED, str(posted))
    assert code == 0, out  # the write's landing is not observable
    code, out, _ = cli(DEFERRED, str(posted), "--observable",
                       "decode.allocate,prefill.post,decode.land")
    assert code == 6 and out.splitlines()[0] == (
        f"DEVIATES at {posted}:3: no observable event until t=10 is not possible here;"
        " possible next events were `decode.land(A, 0)` at t in [1, 4], `prefill.post(A, 1)`"
        " at t in [1, 4]; the longest matching prefix ends at line 2")


def test_odd_but_readable_logs(tmp_path: Path) -> None:
    """A byte-order mark and CRLF line ends are read; an empty log, or one with no event
    line, conforms with a warning that it shows nothing; every line read is counted."""
    log = tmp_path / "x.jsonl"
    line = '{"t": 0, "event": "decode.allocate", "args": {"r": "A", "s": "s0"}}'
    log.write_bytes(b"\xef\xbb\xbf" + line.encode() + b"\r\n# a comment\r\n\r\n")
    code, out, _ = cli(DEFERRED, str(log))
    assert code == 0 and out.splitlines() == [
        f"CONFORMS: the 1 event of {log} is a run of the spec",
        "  3 lines, 1 event, at most 1 symbolic state at once, observable: decode.allocate"]
    log.write_text('{"t": "1/3", "event": "decode.allocate", "args": {"r": "A", "s": "s0"}}\n'
                   '{"t": "2/3", "event": "prefill.post", "args": {"r": "A", "k": 0}}\n',
                   encoding="utf-8")
    code, out, _ = cli(DEFERRED, str(log))  # exact ratios, as kvrace prints such times
    assert code == 0, out
    log.write_text('{"t": "1/0", "event": "decode.allocate"}\n', encoding="utf-8")
    code, _, err = cli(DEFERRED, str(log))
    assert code == 2 and "timestamp `t` is not a number: '1/0'" in err
    log.write_text("# nothing\n", encoding="utf-8")
    code, out, _ = cli(DEFERRED, str(log))
    assert code == 0 and out.splitlines()[1] == (
        f"warning: {log} shows nothing: it has no event line")


def test_the_diagram_draws_the_violating_run_with_its_own_times(tmp_path: Path) -> None:
    """Of a log of two runs, the diagram draws the one with the race (times from its own
    start); an unobserved event after the last observed one is drawn at the log's last
    line, the time it happened by."""
    log = tmp_path / "two.jsonl"
    race = (ROOT / LOGS / "immediate_race.jsonl").read_text(encoding="utf-8")
    log.write_text(race + '{"run": 2, "t": 100}\n{"t": 101, "event": "decode.allocate",'
                   ' "args": {"r": "A", "s": "s0"}}\n', encoding="utf-8")
    diagram = tmp_path / "two.dot"
    code, _, _ = cli(IMMEDIATE, str(log), "--diagram", str(diagram))
    assert code == 1
    times = re.findall(r">t=([0-9.]+)<", diagram.read_text(encoding="utf-8"))
    assert times == ["0", "0.5", "1", "1", "1.1", "1.3"]
    diagram = tmp_path / "lost.dot"
    code, _, _ = cli(STRICT, f"{LOGS}/bounded_release_lost.jsonl", "--diagram", str(diagram))
    assert code == 1
    dot = diagram.read_text(encoding="utf-8")
    assert re.findall(r">t=([0-9.]+)<", dot) == ["0", "1", "2", "2", "3", "63"]
    assert "timeout_keep(A)" in dot and "no response within T_bound" in dot


@pytest.mark.slow  # 7,305 simulated runs
def test_the_benchmark_log_of_the_readme() -> None:
    """The README's figure: of the 7,305 runs of the benchmark's 100,000-event log
    (seed 1), 2,193 end in the race."""
    model = model_of(IMMEDIATE)
    ends = [r.end for r in simlog.simulated_runs(model, 1, 7305)]
    assert ends.count("violation") == 2193
    assert sum(1 for line in simlog.simulated_log(model, 1, 100_000)
               if line.startswith('{"run"')) + 1 == 7305
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "100,000 events in 7,305 runs (2,193 of which end in the race" in readme

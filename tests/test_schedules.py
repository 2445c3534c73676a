"""``kvrace schedules``: every schedule replays, through ``kvrace validate``, to the
outcome it claims (the log of its actions conforms to the spec, and every run
consistent with it breaks the property the schedule names)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ROOT, run_cli

from checker import api
from checker.language import load
from checker.model.compiled import SpecModel
from checker.validate import conform
from checker.validate.log import read_json_lines
from checker.validate.schedules import ActionKind, from_trace, schedule_log

CASES = [
    ("spec/sglang/immediate_release.kvr", {}),
    ("spec/sglang/deferred_release.kvr", {"T_hold": "7"}),
    ("spec/sglang/kv_checksum.kvr", {}),
    ("spec/sglang/premature_ack.kvr", {}),
    ("spec/vllm/lease_expired_read.kvr", {}),
    ("spec/sglang/strict_no_release_on_timeout.kvr", {}),
]


@pytest.mark.parametrize(("path", "params"), CASES, ids=[Path(c[0]).stem for c in CASES])
def test_every_schedule_replays_to_its_outcome(path: str, params: dict[str, str]) -> None:
    spec = load(str(ROOT / path))
    outcome = api.check(spec, params)
    assert outcome.verdict == api.VIOLATED and outcome.trace is not None
    names = {ev.label: tuple(p for p, _ in ev.params) for ev in spec.events}
    schedule = from_trace("counterexample", outcome.trace, names)
    model = SpecModel(spec, outcome.params)
    mon = conform.Monitor(model, "schedule", frozenset(conform.EventIndex(model).names()))
    rep = conform.validate(mon, read_json_lines("schedule", schedule_log(schedule)))
    assert rep.outcome is conform.Outcome.CONFORMS, rep.deviation
    assert rep.broken is not None and rep.certainty is conform.Certainty.CERTAIN
    assert rep.broken.name == schedule.property
    assert schedule.message is not None and schedule.message.startswith(rep.broken.message)
    # Deliveries are the delays a harness injects: each after its sender.
    for a in schedule.actions:
        if a.kind is ActionKind.DELIVER:
            assert a.sent_by is not None and a.delay is not None and a.delay >= 0


def test_the_flagship_schedule(in_root: object) -> None:
    code, out, _ = run_cli("schedules", "spec/sglang/immediate_release.kvr")
    assert code == 1
    assert out.splitlines()[2:] == [
        "schedule counterexample: breaks assert: write of A chunk 0 lands in slot s0 owned"
        " by B",
        "step  t  actor    action",
        "   1  1  decode   fire decode.allocate(A, s0)",
        "   2  2  prefill  fire prefill.post(A, 0)",
        "   3  3  router   fire router.abort(A)",
        "   4  3  decode   fire decode.release(A)",
        "   5  4  decode   fire decode.allocate(B, s0)",
        "   6  5  decode   deliver decode.land(A, 0): hold the message of step 2 for 3",
    ]
    code, out, _ = run_cli("schedules", "spec/sglang/deferred_release.kvr", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["schedules"] == [] and doc["check_verdict"] == "holds"

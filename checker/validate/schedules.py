"""Test schedules for the implementation: a spec's timed counterexample as the steps
a test harness drives.

A counterexample of ``check`` is a timed run.  As a schedule, each of its events is
one action at its time (from the start of the test):

* a **delivery** (an event that ``receives`` an earlier one: a write landing, a
  message arriving) is a delay the harness injects: hold the message of step ``j``
  until ``t`` (``t - t_j`` after it was sent), e.g. by delaying the transfer
  engine's write call;
* any other event is **fired** at ``t``: by the harness when it is an input of the
  system (an abort), or by the system itself, which the harness then expects.

:func:`schedule_log` turns a schedule back into a log (JSON lines): replayed by
``kvrace validate``, it must conform and show the outcome the schedule claims.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from fractions import Fraction

from checker.model.trace import Trace, fmt_time


class ActionKind(str, enum.Enum):
    """What the harness does at one step."""

    FIRE = "fire"
    """The event happens at the time (the harness triggers it, or expects it)."""
    DELIVER = "deliver"
    """The message of an earlier step is delivered at the time (a delay injected)."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Action:
    """One step of a schedule."""

    step: int
    time: Fraction
    actor: str
    event: str
    """``actor.event``."""
    args: tuple[tuple[str, str], ...]
    label: str
    """``decode.land(A, 0)``."""
    kind: ActionKind
    sent_by: int | None = None
    """For a delivery: the step whose message it is."""
    delay: Fraction | None = None
    """For a delivery: the time since that step."""

    def text(self) -> str:
        """The action in words."""
        if self.kind is ActionKind.DELIVER:
            assert self.delay is not None
            return (f"deliver {self.label}: hold the message of step {self.sent_by}"
                    f" for {fmt_time(self.delay)}")
        return f"fire {self.label}"


@dataclass(frozen=True)
class Schedule:
    """A timed test schedule and the outcome it leads to."""

    name: str
    property: str | None
    """The property the schedule breaks (None: it breaks none)."""
    message: str | None
    actions: tuple[Action, ...]

    def table(self) -> str:
        """A readable table: step, time, actor, action."""
        rows = [("step", "t", "actor", "action")]
        rows += [(str(a.step), fmt_time(a.time), a.actor, a.text()) for a in self.actions]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        out = []
        for r in rows:
            out.append("  ".join([r[0].rjust(widths[0]), r[1].rjust(widths[1]),
                                  r[2].ljust(widths[2]), r[3]]).rstrip())
        return "\n".join(out)

    def json(self) -> dict[str, object]:
        """The schedule as the JSON contract describes it."""
        return {"name": self.name, "property": self.property, "message": self.message,
                "actions": [{"step": a.step, "t": fmt_time(a.time), "actor": a.actor,
                             "event": a.event, "args": dict(a.args), "label": a.label,
                             "kind": a.kind, "sent_by": a.sent_by,
                             "delay": None if a.delay is None else fmt_time(a.delay)}
                            for a in self.actions]}


def from_trace(name: str, trace: Trace, params: dict[str, tuple[str, ...]]) -> Schedule:
    """The schedule of a timed trace; ``params``: each event's parameter names."""
    actions: list[Action] = []
    for step in trace.steps:
        if step.event is None or step.actor is None:
            continue
        assert step.time is not None, "a schedule needs a timed trace"
        names = params.get(step.event, ())
        args = tuple(zip(names, step.args, strict=False))
        sent = step.receives
        if sent is not None:
            t0 = trace.steps[sent].time
            assert t0 is not None
            actions.append(Action(step.index, step.time, step.actor, step.event, args,
                                  step.label, ActionKind.DELIVER, sent, step.time - t0))
        else:
            actions.append(Action(step.index, step.time, step.actor, step.event, args,
                                  step.label, ActionKind.FIRE))
    return Schedule(name, trace.property, trace.message, tuple(actions))


def schedule_log(schedule: Schedule) -> list[str]:
    """The schedule as a JSON-lines log of every event (for ``kvrace validate``)."""
    return [json.dumps({"t": fmt_time(a.time), "event": a.event, "args": dict(a.args)})
            for a in schedule.actions]

"""Random loosely coupled networks of processes, for the local-time differential tests.

:func:`local_model` draws one model from a seed: two or three process templates (one
instance, or one per value of a two-value type), each with a local clock, a local
counter and two or three locations (some with an invariant); a handshake or broadcast
channel; events that move between locations, synchronise or not, test their clock
(closed integer bounds) and data, update their counter, and read or write a shared
variable; an invariant over two processes' locations and a ``reachable`` query.  No
urgency, no bounded response: what ``check --local-time`` accepts.
"""

from __future__ import annotations

import random


def _event(r: random.Random, e: int, locs: list[str], recv_bcast: bool, sync: str) -> str:
    """One event declaration of a process."""
    src, dst = r.choice(locs), r.choice(locs)
    parts = [f"  event e{e} from {src} to {dst}{sync}"]
    conds: list[str] = []
    if r.random() < 0.4:
        conds.append(r.choice(["n < 2", "n == 0", "n > 0", "g == 0", "g != 1"]))
    if not recv_bcast and r.random() < 0.6:
        conds.append(f"x {r.choice(['>=', '<=', '>=', '=='])} {r.randint(0, 4)}")
    if conds:
        parts.append(" when " + " and ".join(conds))
    stmts: list[str] = []
    if r.random() < 0.6:
        stmts.append("reset x")
    if r.random() < 0.4:
        stmts.append("if n < 2 { n := n + 1 } else { n := 0 }")
    if r.random() < 0.3:
        stmts.append(f"g := {r.randint(0, 2)}")
    if stmts:
        parts.append(" do " + "; ".join(stmts))
    return "".join(parts)


def local_model(seed: int) -> str:
    """The model of one seed (the same text on every machine and run)."""
    r = random.Random(seed)
    bcast = r.random() < 0.5
    lines = ["model local_gen", "type P = {p0, p1}", "var g : 0..2 = 0",
             ("broadcast " if bcast else "") + "chan c"]
    procs: list[tuple[str, str | None, list[str]]] = []
    for p in range(r.choice([2, 2, 3])):
        procs.append((f"Q{p}", r.choice([None, None, "P"]), [f"l{k}" for k in
                                                             range(r.choice([2, 3]))]))
    sends = recvs = 0
    for name, inst, locs in procs:
        body = ["  clock x", "  var n : 0..2 = 0"]
        for k, loc in enumerate(locs):
            inv = f": x <= {r.randint(2, 6)}" if k > 0 and r.random() < 0.4 else ""
            body.append(f"  location {loc}{inv}")
        for e in range(r.randint(2, 4)):
            sync, recv_bcast = "", False
            if r.random() < 0.35:
                send = r.random() < 0.5
                sync = " send c" if send else " receive c"
                sends += send
                recvs += not send
                recv_bcast = bcast and not send
            body.append(_event(r, e, locs, recv_bcast, sync))
        head = f"process {name}" + (f"(self: {inst})" if inst else "")
        lines.append(head + " {\n" + "\n".join(body) + "\n}")
    fixes = []
    if not sends:
        fixes.append("  event s from idle send c")
    if not recvs and not bcast:
        fixes.append("  event v from idle receive c")
    if fixes:
        lines.append("process Env {\n  location idle\n" + "\n".join(fixes) + "\n}")

    def at(proc: tuple[str, str | None, list[str]], var: str) -> str:
        return f"{proc[0]}.{var}[p0]" if proc[1] else f"{proc[0]}.{var}"

    a, b = procs[0], procs[1]
    lines.append(f"invariant inv: not ({at(a, 'loc')} == {r.choice(a[2][1:])} and"
                 f" {at(b, 'loc')} == {r.choice(b[2][1:])})")
    lines.append(f"reachable q: {at(b, 'loc')} == {b[2][-1]} and {at(a, 'n')} == 2")
    return "\n".join(lines) + "\n"

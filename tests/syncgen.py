"""Random small models with processes, channels and urgency, for differential tests.

:func:`sync_model` draws one model from a seed: one or two process templates
(over a plain or a symmetric type, or with one instance), each with a local
clock, a local counter and two or three locations (plain, urgent or committed,
some with an invariant); one or two channels (handshake or broadcast, urgent or
not, carrying a value or not); events that move between locations, synchronise,
test clocks and data, and update locals and a global; an invariant over the
locations.  Clock constraints are closed with integer bounds, so integer time
judges the models exactly (see ``tests/diffcheck.py``).  The generator keeps to
the language's rules: broadcast receivers and urgent synchronisations test no
clock, and receivers over a symmetric type write only their own cells.
"""

from __future__ import annotations

import random


def sync_model(seed: int, committed: bool = False) -> str:
    """The model of one seed (the same text on every machine and run); ``committed``:
    some events without a channel are ``committed event``s (without it the draws, and
    so the models, are those from before committed events)."""
    r = random.Random(seed)
    lines = ["model sync_gen", "type K = {k0, k1}", "symmetric type S = {s0, s1}"]
    lines.append("var g : K? = none")
    chans: list[tuple[str, bool, bool, bool]] = []  # name, broadcast, urgent, carries K
    for c in range(r.choice([1, 1, 2])):
        bcast = r.random() < 0.4
        urgent = r.random() < 0.3
        carries = r.random() < 0.5
        chans.append((f"c{c}", bcast, urgent, carries))
        lines.append(("urgent " if urgent else "") + ("broadcast " if bcast else "")
                     + f"chan c{c}" + ("(K)" if carries else ""))
    procs: list[tuple[str, str | None, list[str]]] = []
    for p in range(r.choice([1, 2, 2])):
        inst = r.choice([None, "K", "S"])
        nloc = r.choice([2, 3])
        procs.append((f"P{p}", inst, [f"l{k}" for k in range(nloc)]))
    for name, inst, locs in procs:
        head = f"process {name}" + (f"(self: {inst})" if inst else "")
        body = ["  clock x", "  var n : 0..2 = 0"]
        for k, loc in enumerate(locs):
            kind = ""
            if k > 0 and r.random() < 0.25:
                kind = r.choice(["urgent ", "committed "])
            inv = f": x <= {r.randint(1, 3)}" if not kind and r.random() < 0.4 else ""
            body.append(f"  {kind}location {loc}{inv}")
        for e in range(r.randint(2, 4)):
            src, dst = r.choice(locs), r.choice(locs)
            parts = [f"  event e{e} from {src} to {dst}"]
            sync = None
            if r.random() < 0.6:
                sync = r.choice(chans)
                cname, bcast, urgent, carries = sync
                send = r.random() < 0.5
                if carries:
                    arg = r.choice(["k0", "k1", "self"] if inst == "K" else ["k0", "k1"])
                    if not send and r.random() < 0.5:
                        parts[0] = f"  event e{e}(v: K) from {src} to {dst}"
                        arg = "v"
                    parts.append(f" {'send' if send else 'receive'} {cname}({arg})")
                else:
                    parts.append(f" {'send' if send else 'receive'} {cname}")
                receiver = not send
                clock_free = urgent or (bcast and receiver)
            else:
                receiver = False
                clock_free = False
                if committed and r.random() < 0.4:
                    parts[0] = "  committed" + parts[0][1:]
                    clock_free = True
            conds: list[str] = []
            if r.random() < 0.6:
                conds.append(r.choice(["n < 2", "n == 0", "n > 0", "g == none",
                                       "g != none"]))
            if not clock_free and r.random() < 0.6:
                conds.append(f"x {r.choice(['>=', '<='])} {r.randint(0, 3)}")
            if conds:
                parts.append(" when " + " and ".join(conds))
            stmts: list[str] = []
            if r.random() < 0.6:
                stmts.append("reset x")
            if r.random() < 0.5:
                stmts.append("if n < 2 { n := n + 1 } else { n := 0 }")
            shared_ok = not (receiver and sync is not None and sync[1] and inst == "S")
            if shared_ok and r.random() < 0.3:
                stmts.append(f"g := {r.choice(['k0', 'k1', 'none'])}")
            if stmts:
                parts.append(" do " + "; ".join(stmts))
            body.append("".join(parts))
        lines.append(head + " {\n" + "\n".join(body) + "\n}")
    # Every channel gets a sender, and a handshake a receiver, in a process of its own.
    text = "\n".join(lines)
    fixes: list[str] = []
    for cname, bcast, _urgent, carries in chans:
        arg = "(k0)" if carries else ""
        if f"send {cname}" not in text:
            fixes.append(f"  event s_{cname} from idle send {cname}{arg}")
        if not bcast and f"receive {cname}" not in text:
            fixes.append(f"  event r_{cname} from idle receive {cname}{arg}")
    if fixes:
        lines.append("process Env {\n  location idle\n" + "\n".join(fixes) + "\n}")
    # An invariant over two processes' locations (or one process's counter).
    name, inst, locs = r.choice(procs)
    target = r.choice(locs[1:])
    if inst is not None:
        quant = f"forall q: {inst} . "
        here = f"{name}.loc[q]"
        count = f"{name}.n[q]"
    else:
        quant, here, count = "", f"{name}.loc", f"{name}.n"
    other = r.choice(procs)
    if other[0] != name and other[1] is None:
        lines.append(f"invariant inv: {quant}not ({here} == {target} and"
                     f" {other[0]}.loc == {r.choice(other[2])})")
    else:
        lines.append(f"invariant inv: {quant}not ({here} == {target} and {count} == 2)")
    return "\n".join(lines) + "\n"

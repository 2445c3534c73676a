"""Random models with unbounded liveness properties and fairness, for differential tests.

:func:`live_model` takes a random model of :mod:`tests.modelgen` and adds, drawn
from the same seed: an unbounded ``leadsto`` (the model's bounded response
without its bound, or one over its variables), sometimes an ``always eventually``,
and ``fair`` on some of the events whose guards read no clock (their weak fairness
means the same in integer and in dense time)."""

from __future__ import annotations

import random
import re

from checker.language import load_text
from checker.model import ir
from tests.modelgen import model_for_seed


def live_model(seed: int) -> str:
    """The liveness variant of the random model of ``seed``."""
    r = random.Random(seed * 7919 + 1)
    text = model_for_seed(seed)
    lines = [ln for ln in text.splitlines() if ln]
    out: list[str] = []
    props = 0
    for ln in lines:
        m = re.match(r"property resp(.*) within .*$", ln)
        if m is not None:
            out.append(f"property live{m.group(1)}")
            props += 1
        else:
            out.append(ln)
    bools = re.findall(r"^var (v\d+) : bool(?: =|$)", text, re.MULTILINE)
    atoms = [*(f"ph == {p}" for p in ("s0", "s1")), *bools, *(f"not {b}" for b in bools)]
    if props == 0 or r.random() < 0.5:
        p, q = r.choice(atoms), r.choice(atoms)
        out.append(f"property live2: {p} leadsto {q}")
    if r.random() < 0.4:
        out.append(f"property often: always eventually {r.choice(atoms)}")
    body = "\n".join(out) + "\n"
    spec = load_text(body, "<live>")
    clock_free = [ev.label for ev in spec.events if not ir.has_clock(ev.guard)]
    for label in clock_free:
        if r.random() < 0.5:
            body = re.sub(rf"^event {re.escape(label)}\(", f"fair event {label}(", body,
                          flags=re.MULTILINE)
    return body

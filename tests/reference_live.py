"""A brute-force integer-time reference for unbounded liveness, for differential tests.

It shares nothing with :mod:`checker.algorithms.liveness` but the model interface and
the integer-time transition relation of :mod:`tests.reference` (``Semantics``):

* the graph: every reachable (discrete state, integer clock values capped above
  the constants), with a *delay* edge (one time unit passes, if the deadlines let
  it) and one edge per event instance that can fire;
* a run is an infinite path with infinitely many delay edges (time diverges; a
  capped state that may wait for ever has a delay self-loop), or a finite path
  ending in a deadlock (:meth:`Semantics.deadlocked`);
* weak fairness: for a fair event instance, a cycle must fire it or pass a state
  where it cannot fire (no edge of it can fire there);
* ``P leadsto Q`` is violated iff a state where ``P`` holds and ``Q`` does not
  reaches, through states where ``Q`` does not hold, a deadlock or a strongly
  connected set of such states (Kosaraju's algorithm here) holding a delay edge
  and, for each fair instance, a firing of it or a state where it cannot fire.

For closed constraints with integer constants, integer time is exact for the
cycles (every dense run can be digitised); a dense-time deadlock need not show
on the integer grid (see :mod:`tests.reference`), so a deadlock counterexample
of the zone engine is confirmed on a finer grid by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence

from checker.model.interface import ModelRuntimeError, State
from tests.reference import Clocks, Semantics, ValuedModel

Node = tuple[State, Clocks]
HOLDS, VIOLATED = "holds", "violated"


def _graph(model: ValuedModel, grid: int, max_nodes: int
           ) -> tuple[list[Node], list[list[tuple[int, int]]], list[bool], Semantics]:
    """Nodes, edges (target, event or -1 for a delay) and deadlocks."""
    sem = Semantics(model, grid)
    nodes: list[Node] = []
    index: dict[Node, int] = {}
    succ: list[list[tuple[int, int]]] = []
    dead: list[bool] = []

    def add(n: Node) -> int:
        got = index.get(n)
        if got is None:
            got = index[n] = len(nodes)
            nodes.append(n)
            succ.append([])
            dead.append(False)
            if len(nodes) > max_nodes:
                raise OverflowError("too many integer-time states")
        return got

    todo: list[int] = []
    for s0 in model.initial_states():
        c0 = sem.start(s0)
        if c0 is not None:
            todo.append(add((s0, c0)))
    done: set[int] = set()
    while todo:
        i = todo.pop()
        if i in done:
            continue
        done.add(i)
        s, clocks = nodes[i]
        edges = sem.edges(s)
        out: list[tuple[int, int]] = []
        later = sem.delay(s, clocks)
        if later is not None:
            out.append((add((s, later)), -1))
        for e in edges:
            if e.failure is not None:
                continue
            after = sem.fire(e, clocks)
            if after is not None:
                out.append((add((e.target, after)), e.event))
        succ[i] = out
        dead[i] = sem.deadlocked(s, clocks, edges)
        todo.extend(t for t, _ in out if t not in done)
    return nodes, succ, dead, sem


def _components(inside: Sequence[bool], succ: Sequence[Sequence[tuple[int, int]]]
                ) -> list[list[int]]:
    """Kosaraju: the strongly connected components of the subgraph ``inside``."""
    n = len(inside)
    order: list[int] = []
    seen = [False] * n
    for root in range(n):
        if not inside[root] or seen[root]:
            continue
        seen[root] = True
        stack = [(root, iter(succ[root]))]
        while stack:
            v, it = stack[-1]
            for t, _ in it:
                if inside[t] and not seen[t]:
                    seen[t] = True
                    stack.append((t, iter(succ[t])))
                    break
            else:
                stack.pop()
                order.append(v)
    pred: list[list[int]] = [[] for _ in range(n)]
    for v in range(n):
        if inside[v]:
            for t, _ in succ[v]:
                if inside[t]:
                    pred[t].append(v)
    comp = [-1] * n
    out: list[list[int]] = []
    for v in reversed(order):
        if comp[v] >= 0:
            continue
        members = [v]
        comp[v] = len(out)
        k = 0
        while k < len(members):
            for u in pred[members[k]]:
                if comp[u] < 0:
                    comp[u] = len(out)
                    members.append(u)
            k += 1
        out.append(members)
    return out


def reference_liveness(model: ValuedModel, grid: int = 1, max_nodes: int = 200_000
                       ) -> dict[str, str]:
    """Each liveness property instance of ``model`` (``leadsto_names``) to ``holds`` or
    ``violated``, by brute force in steps of ``1/grid``."""
    nodes, succ, dead, sem = _graph(model, grid, max_nodes)
    names: list[str] = list(model.leadsto_names)  # type: ignore[attr-defined]
    fair: list[int] = sorted(model.fair_events)  # type: ignore[attr-defined]
    can_fire: list[set[int]] = []
    for s, clocks in nodes:
        here: set[int] = set()
        for e in sem.edges(s):
            if e.event in fair and e.failure is None and sem.fire(e, clocks) is not None:
                here.add(e.event)
        can_fire.append(here)
    pq: dict[State, list[tuple[bool, bool]]] = {}
    for s, _ in nodes:
        if s not in pq:
            pq[s] = model.leadsto(s)  # type: ignore[attr-defined]
    out: dict[str, str] = {}
    for k, name in enumerate(names):
        inside = [not pq[s][k][1] for s, _ in nodes]
        bad = {v for v in range(len(nodes)) if inside[v] and dead[v]}
        for members in _components(inside, succ):
            mset = set(members)
            inner = [(v, t, ev) for v in members for t, ev in succ[v] if t in mset]
            if not any(ev == -1 for _, _, ev in inner):
                continue  # no time passes on it (or no cycle at all)
            fired = {ev for _, _, ev in inner}
            ok = all(e in fired or any(e not in can_fire[v] for v in members) for e in fair)
            if ok:
                bad |= mset
        # Backwards from the bad nodes through Q-free nodes.
        pred: dict[int, list[int]] = {}
        for v in range(len(nodes)):
            if inside[v]:
                for t, _ in succ[v]:
                    if inside[t]:
                        pred.setdefault(t, []).append(v)
        reach = set(bad)
        work = list(bad)
        while work:
            v = work.pop()
            for u in pred.get(v, ()):
                if u not in reach:
                    reach.add(u)
                    work.append(u)
        hit = any(inside[v] and pq[nodes[v][0]][k][0] for v in reach)
        out[name] = VIOLATED if hit else HOLDS
    return out


__all__ = ["HOLDS", "VIOLATED", "ModelRuntimeError", "reference_liveness"]

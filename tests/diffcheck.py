"""Comparing the zone explorer with the integer-time reference explorer on one model.

Shared by ``tests/test_differential.py`` and the long differential campaign
(``tests/campaign.py``).  :func:`compare_model` first compares the compiled
model with the IR interpreter (:mod:`checker.model.interp`) state by state
(``tests/oracle.py``), then runs the reference explorer on the interpreter
once (exhaustively) and the zone explorer, on the compiled model, in every configuration of
:data:`ZONE_CONFIGS`, with deadlock checking on and off, and returns every
disagreement as text; :func:`check_model` fails with the model text and both
results when there is one.

For closed clock constraints (``<=``, ``>=``, ``==``) with integer constants,
integer time and dense time reach the same discrete states and break the same
asserts, invariants and bounded-response properties (digitisation), so the two
engines must agree.  Deadlock is the exception in one direction: a dense-time
deadlock may need clock values between integers, so a deadlock the zone
explorer reports and integer time does not see is accepted only once it is
confirmed on a finer grid along the explorer's own trace (:func:`deadlock_grid`).

Every verdict of the zone explorer is also checked on its own: its trace must
be a run of the model in integer time (a grid for deadlocks) that ends
breaking the reported property.  In breadth-first order the trace must be
shortest: the explorer reports, in round ``r``, the properties of the states
it generates from states of depth ``r`` (invariants, responses, asserts: ``r``
+ 1 events) and the errors and deadlocks of states of depth ``r`` itself; the
round it reports in must be the earliest round of any reference finding.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field

from oracle import compare_models
from reference import (
    ASSERT,
    DEADLOCK,
    INCONCLUSIVE,
    MODEL_ERROR,
    Finding,
    RefResult,
    Semantics,
    deadlocks_along,
    reference_explore,
    replay,
    untimed_states,
)

from checker.domains import backend, dbm
from checker.engines import CheckResult, Limits, Options, explore
from checker.engines.search import REACHABLE, UNREACHABLE
from checker.language import load_text
from checker.limits import Budget
from checker.model.compiled import SpecModel
from checker.model.interface import ModelRuntimeError, State, query_matches, scaled_bounds
from checker.model.interp import InterpretedModel
from checker.semantics.canon import canonizer
from checker.semantics.clockbounds import clock_bounds
from checker.semantics.ts import Status, ZoneTS

ZONE_CONFIGS: list[tuple[str, dict[str, object]]] = [
    ("bfs", {"symmetry": True, "clock_reduction": True}),
    ("bfs -sym", {"symmetry": False, "clock_reduction": True}),
    ("bfs -clock", {"symmetry": True, "clock_reduction": False}),
    ("bfs -sym -clock", {"symmetry": False, "clock_reduction": False}),
    ("dfs", {"search": "dfs"}),
    ("bfs python-dbm", {"dbm": "python"}),
    ("bfs extra-m", {"extrapolation": "m"}),
    ("bfs untimed-prepass", {"prepass": "untimed"}),
]
"""Every configuration runs on every model.  ``bfs`` uses the compiled DBM core when
it is built; ``bfs python-dbm`` must then explore exactly the same zone graph."""

RANDOM_REF_MAX_STATES = 40_000
"""A random model whose reference exploration needs more states is skipped."""

STATS: Counter[str] = Counter()
"""Counts over the models checked in this process: verdicts of the breadth-first zone
run (``holds``, ``violated``, ``error``), ``ref_states``, ``skipped``,
``dense_only_deadlocks`` and the known bugs tolerated."""


def state_faults(model: SpecModel, s: State) -> bool:
    """Whether ``s`` itself faults: its deadlines, invariants, responses or
    ``reachable`` queries."""
    try:
        model.deadlines(s)
        model.violations(s)
        model.hazards(s)
        query_matches(model, s)
    except ModelRuntimeError:
        return True
    return False


def zone_round(prop: str, events: int, model: SpecModel | None = None,
               state: State | None = None) -> int:
    """The breadth-first round in which the zone explorer reports a finding: a
    property broken by a generated state (or by its entering edge) in the round that
    expands its parent; a deadlock, or a fault of a state's edges, in the round that
    expands the state; a fault of ``state`` itself (judged with ``model``) when it is
    generated."""
    if prop == MODEL_ERROR and model is not None and state:  # () when initial_states() faults
        return events - 1 if state_faults(model, state) else events
    return events if prop in (DEADLOCK, MODEL_ERROR) else events - 1


def show_findings(findings: dict[str, Finding]) -> str:
    if not findings:
        return "nothing"
    return ", ".join(f"{p} after {f.events} events (state {f.state}, clocks {f.clocks})"
                     for p, f in sorted(findings.items()))


def show_zone(model: SpecModel, res: CheckResult) -> str:
    steps = " -> ".join(s.label for s in res.trace)
    return f"{res.verdict} {res.prop or ''} {res.message or ''} [{steps}] limit={res.limit}"


MAX_GRID = 4


def deadlock_grid(model: SpecModel, res: CheckResult) -> int | None:
    """The coarsest grid (1/g, g up to clocks + 1, at most MAX_GRID) with a deadlocked
    valuation at the end of the zone explorer's deadlock trace, or None."""
    start = res.trace[0].state
    edges = [s.edge for s in res.trace[1:] if s.edge is not None]
    for g in range(1, min(len(model.clock_names) + 1, MAX_GRID) + 1):
        if deadlocks_along(model, start, edges, g):
            return g
    return None


def trace_problem(model: SpecModel, res: CheckResult, prop: str) -> str | None:
    """Why the zone explorer's trace is not an integer-time run breaking ``prop``, if it
    is not one (deadlocks are checked by :func:`deadlock_grid`)."""
    if not res.trace:
        if prop == MODEL_ERROR:
            try:
                model.initial_states()  # observing the initial state can fault
            except ModelRuntimeError:
                return None
        return "the trace is empty"
    start = res.trace[0].state
    final = res.trace[-1].state
    edges = [s.edge for s in res.trace[1:] if s.edge is not None]
    if len(edges) != len(res.trace) - 1:
        return "the trace has a step without an edge"
    if prop == MODEL_ERROR and state_faults(model, final):
        # The final state's own fault: the run enters it with the last edge.
        if not edges:
            return None
        try:
            vals = replay(model, start, edges[:-1])
        except ValueError as err:
            return f"the trace is not a path of the model: {err}"
        sem = Semantics(model)
        if not any(sem.all_hold(edges[-1].guard, v) for v in vals[-1]):
            return "the last edge of the trace cannot fire in integer time"
        return None
    try:
        vals = replay(model, start, edges)
    except ValueError as err:
        return f"the trace is not a path of the model: {err}"
    if not vals[-1]:
        return "the trace cannot be followed in integer time"
    if prop == ASSERT:
        return None if edges and edges[-1].failure is not None else "no failing edge at the end"
    if prop == MODEL_ERROR:
        try:
            model.edges(final)
        except ModelRuntimeError:
            return None
        return "no model error at the end of the trace"
    if any(v.property == prop for v in model.violations(final)):
        return None
    sem = Semantics(model)
    for h in model.hazards(final):
        if h.property == prop and any(sem.all_hold(h.atoms, v, hazard=True) for v in vals[-1]):
            return None
    return f"{prop} is not broken at the end of the trace"


def disagreement(
    model: SpecModel,
    res: CheckResult,
    ref: RefResult,
    *,
    deadlock: bool,
    bfs: bool,
    exhaustive: Callable[[], RefResult] | None = None,
) -> str | None:
    """Why zone result ``res`` and reference result ``ref`` disagree, or None.

    ``exhaustive`` gives an exhaustive reference run when ``ref`` stopped early
    and a finding of the zone explorer is missing from it.
    """
    if ref.verdict == INCONCLUSIVE:
        return None
    findings = {p: f for p, f in ref.findings.items() if deadlock or p != DEADLOCK}
    if res.verdict == "holds":
        if findings:
            return f"zone explorer: holds; reference: {show_findings(findings)}"
        return None
    if res.verdict not in ("violated", "error"):
        return f"zone explorer: {res.verdict} ({res.limit})"
    prop = MODEL_ERROR if res.verdict == "error" else (res.prop or "?")
    if prop == DEADLOCK and not deadlock:
        return "zone explorer reports a deadlock with deadlock checking off"
    events = max(len(res.trace) - 1, 0)
    dense_only = False
    if prop == DEADLOCK:
        grid = deadlock_grid(model, res)
        if grid is None:
            return "the zone explorer's deadlock trace ends in no deadlocked valuation (grids " \
                f"1..{MAX_GRID}); reference: {show_findings(findings)}"
        f = findings.get(DEADLOCK)
        dense_only = grid > 1 and (f is None or f.events > events)
    else:
        problem = trace_problem(model, res, prop)
        if problem is not None:
            return f"zone trace: {problem}; reference: {show_findings(findings)}"
    if not bfs and not ref.exhaustive:
        return None  # the trace is a genuine run breaking prop: nothing more to compare
    f = findings.get(prop)
    if f is None and not dense_only and not ref.exhaustive and exhaustive is not None:
        ref = exhaustive()
        if ref.verdict == INCONCLUSIVE:
            return None  # cannot tell: the trace itself was checked above
        findings = {p: g for p, g in ref.findings.items() if deadlock or p != DEADLOCK}
        f = findings.get(prop)
    if f is None:
        if dense_only:
            return None
        return f"zone explorer: {prop} after {events} events; reference never finds it " \
            f"(reference: {show_findings(findings)})"
    if not bfs:
        return None
    if f.events != events and not dense_only:
        return f"zone explorer: {prop} after {events} events, reference: after {f.events}"
    final = res.trace[-1].state if res.trace else None
    earliest = min(zone_round(p, g.events, model, g.state) for p, g in findings.items())
    if earliest < zone_round(prop, events, model, final):
        return f"zone explorer: {prop} after {events} events (round " \
            f"{zone_round(prop, events, model, final)}), but the reference has an earlier" \
            " finding: " \
            f"{show_findings(findings)}"
    return None


def query_disagreement(model: SpecModel, res: CheckResult, ref: RefResult, *, bfs: bool
                       ) -> str | None:
    """Why the ``reachable`` queries of a complete zone run (verdict holds) disagree with
    the exhaustive reference, or None: the same queries are reachable, a witness is an
    integer-time run to a valuation satisfying the query, and breadth-first it has the
    fewest events."""
    if res.verdict != "holds" or not ref.exhaustive:
        return None
    got = {q.name: q for q in res.queries}
    names = list(getattr(model, "query_names", ()))
    for name in names:
        q = got.get(name)
        want = ref.queries.get(name)
        if q is None or q.status not in (REACHABLE, UNREACHABLE):
            return f"query {name}: {q.status if q else 'missing'} after a complete run"
        if (q.status == REACHABLE) != (want is not None):
            theirs = f"reachable after {want} events" if want is not None else "unreachable"
            return f"query {name}: zone explorer {q.status}, reference {theirs}"
        if want is None:
            continue
        events = len(q.trace) - 1
        if bfs and events != want:
            return f"query {name}: zone witness of {events} events, reference {want}"
        start, final = q.trace[0].state, q.trace[-1].state
        edges = [s.edge for s in q.trace[1:] if s.edge is not None]
        try:
            vals = replay(model, start, edges)
        except ValueError as err:
            return f"query {name}: the witness is not a path of the model: {err}"
        sem = Semantics(model)
        parts = [p for m in model.queries(final) if names[m.query] == name for p in m.parts]
        if not any(sem.all_hold(p, v) for p in parts for v in vals[-1]):
            return f"query {name}: no integer valuation at the end of the witness satisfies it"
    return None


def zone_run(model: SpecModel, opts: dict[str, object], limits: Limits | None = None
             ) -> CheckResult | str:
    try:
        return explore(model, limits, Options(**opts))  # type: ignore[arg-type]
    except Exception as exc:  # a crash is a finding too
        return f"zone explorer crashed: {type(exc).__name__}: {exc}"


# ---- tolerating a known bug while it is being fixed ------------------------------------------
#
# While a bug is known but not fixed, TOLERATE_KNOWN_BUGS lets known_bug() count the
# disagreements it explains instead of failing, so the random tests keep checking the rest.

TOLERATE_KNOWN_BUGS = False


def known_bug(model: SpecModel, res: CheckResult, ref: RefResult, *, deadlock: bool,
              opts: dict[str, object]) -> str | None:
    """The known bug that explains a disagreement of ``res`` with ``ref``, if any."""
    if not TOLERATE_KNOWN_BUGS:
        return None
    bfs = opts.get("search", "bfs") == "bfs"
    if opts.get("clock_reduction", True) and untimed_states(model)[1]:
        res2 = zone_run(model, {**opts, "deadlock": deadlock, "clock_reduction": False})
        if isinstance(res2, CheckResult) and disagreement(
                model, res2, ref, deadlock=deadlock, bfs=bfs) is None:
            return "KB2"
    return None

# Open bugs that a comparison shows as a crash rather than as two verdicts.  While one is
# open, known_problem() names the problems it explains so that the random tests tolerate
# (and count) them and keep checking everything else; the campaign reports them all.  Each
# has a regression spec in tests/regressions/.
#
# KB5 (fixed): a model fault escaped as an uncaught exception instead of the verdict
#      `error`: clock atoms of an enabled guard branch were evaluated outside the fault
#      handler (`o == none or c[o] >= 1` with o = none), and clock atoms with fixed
#      indices were computed when the model was built, even for instances whose guard
#      never holds (`i == 0 and c[i + 1] >= 1` for i = 1).
# KB6 (fixed): faults were not symmetric when `exists`/`forall` short-circuit in the order
#      of a symmetric type's values, so symmetry reduction could keep a non-faulting
#      representative (a wrong HOLDS) or map a faulting one back to a trace that does not
#      fault (tests/regressions/symmetric_fault_*.kvr).
# KB7 (fixed): an invariant that faults in a successor was reported as a model error of
#      its parent (tests/regressions/invariant_fault_after_event.kvr).

OPEN_BUGS: dict[str, bool] = {"KB5": False}


def known_problem(problem: str) -> str | None:
    """The open bug that explains ``problem`` (a line of :attr:`Outcome.problems`), if any."""
    if OPEN_BUGS.get("KB5") and ("crashed: _Fault:" in problem or "crashed: Fault:" in problem):
        return "KB5"
    return None


@dataclass
class Outcome:
    """What comparing the engines on one model text found."""

    text: str
    skipped: bool = False
    """The reference explorer needed more than its state limit: nothing was compared."""
    ref: RefResult | None = None
    verdict: str | None = None
    """The breadth-first zone explorer's verdict (symmetry, clock reduction and deadlock
    checking on)."""
    prop: str | None = None
    """The property it reports broken (``deadlock``, ``assert``, ``model error``, a name)."""
    problems: list[str] = field(default_factory=list)
    """Every disagreement, crash or inconsistency, as text (empty: the engines agree)."""
    bugs: set[str] = field(default_factory=set)
    """Known bugs that explain disagreements (only with :data:`TOLERATE_KNOWN_BUGS`)."""
    dense_only_deadlock: bool = False
    oracle_states: int = 0
    """Discrete states where the compiled model and the interpreter were compared."""
    lu_restarts: int = 0
    """Runs where a deadlock of the LU abstraction was not confirmed by the exact replay
    and the explorer started again with Extra_M."""
    native: bool = False
    """The compiled model ran on its compiled successor function (``KVRACE_NATIVE=1``)."""

    @property
    def ref_states(self) -> int:
        """States the reference explorer reached (0 when it did not finish)."""
        return self.ref.states if self.ref is not None and not self.skipped else 0

    def report(self) -> str:
        """The model text, the reference's result and every problem."""
        ref = self.ref
        ref_text = "reference: did not run" if ref is None else (
            f"reference: {ref.verdict} {ref.prop} after {ref.events} events, "
            f"{ref.states} states; findings: {show_findings(ref.findings)}")
        return f"engines disagree on\n{self.text}\n{ref_text}\n" + "\n".join(self.problems)


def compare_model(text: str, *, max_states: int = RANDOM_REF_MAX_STATES) -> Outcome:
    """Run both engines on one model text and collect every disagreement.

    The text must elaborate (a spec error is raised, not reported: it is the
    generator's fault).  Anything else that goes wrong — compiling the model, a crash of
    either explorer, a strict clock constraint the reference cannot judge — is a problem.
    """
    out = Outcome(text)
    spec = load_text(text, "<generated>")
    try:
        model = SpecModel(spec)
    except Exception as exc:  # the model elaborated: compiling it must not fail
        out.problems.append(f"compiling the model crashed: {type(exc).__name__}: {exc}")
        return out
    # The compiled model against the interpreter, state by state.
    try:
        same = compare_models(spec, model.values, max_states=max_states, compiled=model)
    except Exception as exc:
        out.problems.append(f"the state-by-state comparison crashed: {type(exc).__name__}:"
                            f" {exc}")
        return out
    out.oracle_states = same.states
    out.native = model.successors == "native"
    out.problems.extend(f"compiled model and interpreter: {p}" for p in same.problems)
    if out.problems:
        return out
    # The reference explorer runs on the interpreter, the zone explorer on the compiled model.
    try:
        ref = reference_explore(InterpretedModel(spec, model.values), exhaustive=True,
                                per_clock=True, max_states=max_states)
    except Exception as exc:
        out.problems.append(f"reference explorer crashed: {type(exc).__name__}: {exc}")
        return out
    out.ref = ref
    if ref.verdict == INCONCLUSIVE:
        out.skipped = True
        return out
    if ref.strict:
        out.problems.append("the model has a strict clock constraint: integer time cannot "
                            "judge it (a generator bug)")
        return out
    try:
        why = zone_graph_disagreement(model)
    except Exception as exc:
        why = f"the zone graphs crashed: {type(exc).__name__}: {exc}"
    if why is not None:
        out.problems.append(why)
    for deadlock in (True, False):
        by_config: dict[str, CheckResult] = {}
        for name, opts in ZONE_CONFIGS:
            res = zone_run(model, {**opts, "deadlock": deadlock})
            if isinstance(res, str):
                out.problems.append(f"{name} deadlock={deadlock}: {res}")
                continue
            why = disagreement(model, res, ref, deadlock=deadlock, bfs=name.startswith("bfs"))
            if why is None:
                why = query_disagreement(model, res, ref, bfs=name.startswith("bfs"))
            if why is not None:
                bug = known_bug(model, res, ref, deadlock=deadlock, opts=opts)
                if bug is not None:
                    out.bugs.add(bug)
                    continue
                out.problems.append(f"{name} deadlock={deadlock}: {why}\n"
                                    f"    zone: {show_zone(model, res)}")
            by_config[name] = res
            if name == "bfs" and res.prop == DEADLOCK and DEADLOCK not in ref.findings:
                out.dense_only_deadlock = True
        c_run, py_run = by_config.get("bfs"), by_config.get("bfs python-dbm")
        if c_run is not None and py_run is not None:
            a = (c_run.verdict, c_run.prop, [t.label for t in c_run.trace], c_run.stats.states,
                 c_run.stats.zones, c_run.stats.transitions)
            b = (py_run.verdict, py_run.prop, [t.label for t in py_run.trace],
                 py_run.stats.states, py_run.stats.zones, py_run.stats.transitions)
            if a != b:
                out.problems.append(f"deadlock={deadlock}: the compiled DBM core and the Python"
                                    f" reference explore differently: {a} != {b}")
        if deadlock and "bfs" in by_config and by_config["bfs"].stats.extrapolation == "m":
            out.lu_restarts += 1
        # Symmetry reduction (and clock reduction) never change a breadth-first verdict
        # nor the round that reports it.
        keys = {}
        for name, res in by_config.items():
            if name.startswith("bfs"):
                prop = MODEL_ERROR if res.verdict == "error" else (res.prop or "")
                keys[name] = (res.verdict, zone_round(prop, max(len(res.trace) - 1, 0), model,
                                                      res.trace[-1].state if res.trace else None)
                              if res.verdict != "holds" else None)
        if len(set(keys.values())) > 1:
            out.problems.append(f"deadlock={deadlock}: the reductions change the verdict: {keys}")
        why = reached_disagreement(model, by_config)
        if why is not None:
            out.problems.append(f"deadlock={deadlock}: {why}")
        if deadlock and "bfs" in by_config:
            out.verdict = by_config["bfs"].verdict
            out.prop = MODEL_ERROR if out.verdict == "error" else by_config["bfs"].prop
    return out


def orbits(model: SpecModel, states: Iterable[State]) -> frozenset[State]:
    """The least image of each state under every permutation of the symmetric values
    (enumerated, independently of the canonizer): one state per orbit."""
    perms = model.symmetries()
    return frozenset(min([s, *(p.state(s) for p in perms)]) for s in states)


def reached_disagreement(model: SpecModel, by_config: dict[str, CheckResult]) -> str | None:
    """Whether the runs that hold reached different discrete states up to the
    permutations: symmetry reduction keeps one state per orbit, every other reduction
    and abstraction keeps every discrete state."""
    reached = {name: orbits(model, res.reached) for name, res in by_config.items()
               if res.verdict == "holds" and res.reached is not None}
    if len(set(reached.values())) <= 1:
        return None
    sizes = {name: len(states) for name, states in reached.items()}
    return f"the runs that hold reach different discrete states (orbits per run: {sizes})"


ZONE_GRAPH_MAX_NODES = 5_000
"""A zone graph compared with and without symmetry reduction has at most this many nodes
(bigger ones are not compared)."""


def zone_graph_orbits(model: SpecModel, reduced: bool) -> frozenset[Hashable] | None:
    """The nodes of the zone graph (every node kept, compared by equality), each as
    the least of its images under every permutation (enumerated, the zones permuted by
    the Python DBM reference): one per orbit.  ``reduced``: the graph the canonizer
    reduces.  None when the graph is too large or a model error interrupts it."""
    bounds, _ = scaled_bounds(model.bounds, model.values)
    timed = backend.select(None) if len(model.clock_names) <= 64 else None
    try:  # the pre-pass meets a model error of the initial state first
        live = clock_bounds(model, bounds, Budget(Limits(max_states=20_000)),
                            canonizer(model), timed=timed)
    except ModelRuntimeError:
        return None
    ts = ZoneTS(model, bounds, live, canonical=model.canonizer if reduced else None,
                labels=frozenset())
    dz = ts.dz
    perms = model.symmetries()

    def least(s: State, z: list[int]) -> Hashable:
        f = dz.frame(s)
        best = (s, tuple(z))
        for p in perms:
            t = p.state(s)
            tpos = dz.frame(t).pos
            tz = dbm.permute(z, f.n, [0] + [tpos[p.clocks[c]] for c in f.clocks])
            best = min(best, (t, tuple(tz)))
        return best

    seen: set[Hashable] = set()
    out: set[Hashable] = set()
    try:
        todo = deque(ts.initial())
        while todo:
            node = todo.popleft()
            key = ts.key(node.state, node.zone)
            if node.status is not Status.OK or key in seen:
                continue
            if len(seen) >= ZONE_GRAPH_MAX_NODES:
                return None
            seen.add(key)
            out.add(least(node.state, node.zone))
            todo.extend(ts.next(node.state, node.zone))
    except ModelRuntimeError:
        return None
    return frozenset(out)


def zone_graph_disagreement(model: SpecModel) -> str | None:
    """Whether the zone graph reduced by the canonizer has other nodes, up to the
    permutations, than the whole one: a canonical form that is not an image of its
    node (a zone permuted unlike its state) shows here even when no verdict moves."""
    if model.canonizer is None:
        return None
    whole = zone_graph_orbits(model, False)
    reduced = zone_graph_orbits(model, True)
    if whole is None or reduced is None or whole == reduced:
        return None
    return (f"symmetry reduction changes the zone graph up to the permutations: "
            f"{len(reduced - whole)} orbits only reduced, {len(whole - reduced)} only whole")


def record(out: Outcome, stats: Counter[str] | None = None) -> None:
    """Add one outcome to ``stats`` (default :data:`STATS`)."""
    stats = STATS if stats is None else stats
    if out.skipped:
        stats["skipped"] += 1
        return
    stats["ref_states"] += out.ref_states
    stats["oracle_states"] += out.oracle_states
    stats["lu_restarts"] += out.lu_restarts
    if out.verdict is not None:
        stats[out.verdict] += 1
    if out.dense_only_deadlock:
        stats["dense_only_deadlocks"] += 1
    for bug in out.bugs:
        stats[bug] += 1


def check_model(text: str) -> Outcome:
    """Run both engines on one model text; fail with an actionable message on disagreement."""
    out = compare_model(text)
    record(out)
    assert not out.problems, out.report()
    return out

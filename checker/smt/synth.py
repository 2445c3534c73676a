"""Parameter synthesis and proof by parametric zone exploration (EFsynth).

The algorithm is IMITATOR's EFsynth: explore symbolic states (discrete state,
convex polyhedron over the live clocks *and* the free parameters,
:class:`checker.smt.zones.PolyTS`: the same successor relation as the zone
explorer's — guard, reset, move to the target's live clocks, target deadlines,
time elapse, deadlines again — but with the parameters symbolic) with the loop
every engine runs (:func:`checker.algorithms.covreach.covreach`), under a goal
(:class:`BadRegion`) that collects instead of stopping.  Every state where a
property breaks contributes its projection onto the parameters to the *bad*
region; the safe region is the declared ranges minus the bad region.

* Sound and complete when exploration finishes: every reachable symbolic
  state is visited (inclusion subsumption only drops states whose valuations
  are all already covered — a stored state that a later, larger one of the
  same discrete state covers is retired from the waiting list too, since the
  successors are monotone in the polyhedron — and branches whose parameters
  are already all bad cannot add new bad parameters — constraints only shrink
  along a path).
* Fast: the polyhedral operations are memoised (time closure, Fourier–Motzkin
  steps, clock atoms, satisfiability), and most satisfiability queries are
  decided exactly without Z3 (:mod:`checker.smt.quick`).
* Merging (on by default; ``merge=False``, ``--no-merge``), as IMITATOR does
  (André, Fribourg, Soulat, "Merge and conquer", ATVA 2013): a new symbolic
  state is merged with every stored state of the same discrete state that is
  still waiting and whose union with it is convex (decided exactly:
  :meth:`checker.smt.zones.PolyZones.union`); the earliest of those holds the
  union, in its place in the waiting list.  That union is then merged with the
  expanded states it can be merged with (as IMITATOR merges with visited
  states): the earliest of them holds the union in the store, and the parts not
  expanded yet are expanded on their own, so no state is expanded twice
  (:class:`~checker.algorithms.covreach.Passed`).  The region is
  the same with and without it, for every target:

  - the merged polyhedron is exactly the union of its parts, so the concrete
    configurations (discrete state, clocks, parameters) stored are the same, and
    every successor operation (guard, reset, time elapse, deadlines) is an image
    of configurations, so successors distribute over union: the same
    configurations are reached (a state held by an expanded one has its
    successors: those of the expanded parts were computed, the others' are);
  - every bad piece is the parameter projection of a set defined configuration
    by configuration — a broken invariant (by the discrete state alone), a
    failing edge (its guard), a hazard or a query (clock atoms) — and
    projection distributes over union;
  - deadlocks are computed on the stored polyhedron P (P minus the time
    predecessors of each edge's enabled part within P).  Every stored
    polyhedron is closed under time elapse within its state's deadlines (a
    delay from a point of P that keeps to them stays in P), so a point of P
    meets an enabled part within P exactly when it can fire that edge after
    some delay: the deadlocked part is per configuration too, and the union of
    two time-closed polyhedra is time-closed, so the merged state deadlocks
    exactly where one of its parts does (and a part expanded on its own is
    time-closed too);
  - the pruning below (a state whose parameters are all bad) still holds: the
    successors of a union have parameters in the union of the projections;
  - only the parent pointers lose their meaning (a merged state's path does not
    reach all of it): synthesis reads no trace from them, and ``prove``
    re-checks its counterexample with the zone explorer;
  - symmetry: both parts are representatives of the same canonical discrete
    state, and the orbit of a union is the union of the orbits;
  - termination is not claimed in general (a merged polyhedron's successors need
    not be polyhedra the exploration without merging meets); a run that does not
    end stops at a limit as inconclusive either way.
* Parametric exploration need not terminate on cyclic models (there is no
  extrapolation with symbolic constants); limits end such a run as
  *inconclusive*, never as a proof.
* Properties covered: every ``assert``, ``invariant`` and bounded-response
  property, and (unless turned off) deadlock freedom, with the zone
  explorer's meaning: a valuation of a state with an active deadline from
  which no edge can fire after any delay.  Per symbolic state, the valuations
  (clocks and parameters) that can still fire an edge are the time
  predecessors of each edge's enabled part (guard, and the target's deadlines
  after the resets); what is left of the state once they are subtracted — a
  union of convex pieces — deadlocks, and its projection onto the parameters
  is bad.  Parameter values for which the initial state already breaks a
  deadline are bad too (time cannot even start).
"""

from __future__ import annotations

import enum
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import z3

from checker.algorithms.covreach import Budget, Passed, Stats, Waiting, covreach, waiting_list
from checker.limits import LimitHit, Limits
from checker.model.interface import (
    GT,
    LE,
    LT,
    ClockAtom,
    ParamConstraint,
    State,
    TimedModel,
    query_matches,
)
from checker.model.timeline import Elapse, Reset, TraceShape, timeline
from checker.results import Coverage, ProofStatus
from checker.semantics.canon import canonizer
from checker.semantics.clockbounds import live_clocks
from checker.semantics.ts import Label, LabelKind, Status, Succ
from checker.smt.lin import LinFormula
from checker.smt.poly import (
    Lin,
    OutOfTime,
    Z3Context,
    dedupe,
    eliminate,
    included,
    param_var,
    remove_redundant,
)
from checker.smt.quick import Shortcuts
from checker.smt.timing import SolverUnknown, _to_fraction
from checker.smt.zones import PieceLabel, Poly, PolyTS, PolyZones, bound_lin

DELAY = "d"
COVER_SPLIT_PIECES = 6
"""Up to this many bad pieces, whether a parameter set is covered by them is decided
by splitting it along their constraints (conjunctive queries, mostly decided without
Z3); beyond, by one Z3 query with the pieces' negations."""


@dataclass
class SynthStats:
    """What a parametric exploration did."""

    states: int = 0
    symbolic_states: int = 0
    """Symbolic states ever stored (those later merged or covered included)."""
    transitions: int = 0
    queries: int = 0
    seconds: float = 0.0
    final_states: int = 0
    """Symbolic states stored at the end (neither merged into another nor covered)."""
    merges: int = 0
    """Merges of two symbolic states into one."""


STATS_OBSERVERS: list[Callable[[Stats], None]] = []
"""Each is called with a parametric exploration's statistics (the reachability loop's
:class:`~checker.algorithms.covreach.Stats`: ``stored`` counts the symbolic states) when
it starts; the object is then updated in place as the exploration runs (the command
line reads it for its progress display).  Empty by default."""


class TargetKind(enum.Enum):
    """What a parametric exploration collects the parameters of."""

    ALL = "all"
    """Violations of every property (and deadlocks, unless turned off): EFsynth of the
    bad region."""
    PROPERTY = "property"
    """Violations of one named invariant or bounded response (or ``deadlock``): the
    others are not properties of this run, states breaking them are explored on."""
    QUERY = "query"
    """States satisfying one ``reachable`` query: the values for which it is reachable
    (IMITATOR's EF); no property is checked."""


@dataclass(frozen=True)
class Target:
    """The target of a parametric exploration; ``name`` is the property's or query's."""

    kind: TargetKind = TargetKind.ALL
    name: str = ""

    def matches(self, prop: str) -> bool:
        """Whether a broken property (a label's name, ``inv[A]`` for an instance of a
        family) counts for this target."""
        if self.kind is TargetKind.ALL:
            return True
        if self.kind is TargetKind.QUERY:
            return False
        return prop == self.name or prop.startswith(self.name + "[")


EVERY_PROPERTY = Target()


@dataclass
class Region:
    """A set of parameter valuations: a union of convex polyhedra over the free
    parameters (each a conjunction of :class:`Lin`)."""

    pieces: list[list[Lin]] = field(default_factory=list)


@dataclass
class SynthResult:
    """The outcome of a parametric exploration."""

    complete: bool
    free: list[str]
    ranges: list[Lin]
    bad: Region
    stats: SynthStats
    limit: str | None = None
    properties: dict[int, str] = field(default_factory=dict)
    """For each bad piece (by index), the property that broke there."""


def range_constraints(model: TimedModel, free: Sequence[str]) -> list[Lin]:
    """The declared ranges of the free parameters and the spec's ``assume`` constraints
    (the other parameters at their values) as constraints: the parameter space every
    parametric exploration starts from."""
    out = _box(model, free)
    out.extend(constraint_lin(c, free, model.values) for c in model.param_constraints)
    got = dedupe(out)
    return got if got is not None else [Lin((), Fraction(1), False)]


def _box(model: TimedModel, free: Sequence[str]) -> list[Lin]:
    """The declared ranges of the free parameters alone."""
    out: list[Lin] = []
    for p in free:
        prm = model.params[p]
        v = param_var(p)
        if prm.lo is not None:
            out.append(Lin.make({v: Fraction(-1)}, prm.lo, prm.lo_open))
        if prm.hi is not None:
            out.append(Lin.make({v: Fraction(1)}, -prm.hi, prm.hi_open))
    return out


def constraint_lin(c: ParamConstraint, free: Sequence[str], values: Mapping[str, Fraction]
                   ) -> Lin:
    """An ``assume`` constraint over ``free`` (the other parameters at ``values``)."""
    coefs = {param_var(p): a for p, a in c.expr.terms if p in free}
    const = c.expr.const + sum((a * values[p] for p, a in c.expr.terms if p not in free),
                               Fraction(0))
    return Lin.make(coefs, const, c.strict)


def unsatisfiable_constraint(model: TimedModel, free: Sequence[str]
                             ) -> ParamConstraint | None:
    """When no valuation of ``free`` in the ranges satisfies the spec's ``assume``
    constraints (the others at their values): one of them, the last whose addition
    makes the conjunction empty; None when they admit some value."""
    if admits(model, free, []):
        return None
    plain: list[Lin] | None = _box(model, free)
    ctx = Z3Context()
    for c in model.param_constraints:
        assert plain is not None
        plain = dedupe([*plain, constraint_lin(c, free, model.values)])
        if plain is None or not ctx.sat(plain):
            return c
    return model.param_constraints[-1] if model.param_constraints else None


def admits(model: TimedModel, free: Sequence[str], cons: Sequence[Lin]) -> bool:
    """Whether some valuation of ``free`` inside the declared ranges satisfies ``cons``
    (a conjunction over the free parameters)."""
    got = dedupe([*range_constraints(model, free), *cons])
    return got is not None and Z3Context().sat(got)


def probe_points(model: TimedModel, free: Sequence[str]) -> list[list[Fraction]]:
    """A few valuations of ``free`` at which satisfiability is tried without Z3: the
    defaults, the middle of the ranges, and for each parameter the middle with that
    one near the low and near the high end (a side without a bound: the default)."""
    def at(p: str, frac: Fraction) -> Fraction:
        prm = model.params[p]
        if prm.lo is not None and prm.hi is not None:
            return prm.lo + (prm.hi - prm.lo) * frac
        return model.values.get(p, Fraction(0))

    mid = [at(p, Fraction(1, 2)) for p in free]
    points = [[model.values.get(p, Fraction(0)) for p in free], mid]
    for i, p in enumerate(free):
        for frac in (Fraction(1, 8), Fraction(7, 8)):
            point = list(mid)
            point[i] = at(p, frac)
            points.append(point)
    out: list[list[Fraction]] = []
    for point in points:
        if point not in out:
            out.append(point)
    return out


class BadRegion:
    """EFsynth's goal: every labelled state adds the parameters of its pieces to the
    bad region, and the search goes on (a state that breaks an invariant outright is
    not expanded; nor is one whose parameters are all bad already: constraints only
    shrink along a path, so nothing new can be learned below it)."""

    def __init__(self, ts: PolyTS, store: Passed[Poly], waiting: Waiting,
                 target: Target = EVERY_PROPERTY, query: int | None = None) -> None:
        self.ts = ts
        self.ctx = ts.pz.ctx
        self.store = store
        self.waiting = waiting
        self.bad = Region()
        self.bad_props: list[str] = []
        self.target = target
        self.query = query
        """With a query target: its position in the model's ``query_names``."""

    # ---- the bad region --------------------------------------------------------------------
    def covered(self, params: Sequence[Lin]) -> bool:
        """Whether every parameter valuation of ``params`` is already known bad."""
        pieces = self.bad.pieces
        if not pieces:
            return False
        if len(pieces) > COVER_SPLIT_PIECES:
            ctx = self.ctx
            outside = [z3.Not(z3.And(*[ctx.expr(c) for c in piece])) for piece in pieces]
            return not ctx.sat(params, outside)
        return self._covered(params, 0)

    def _covered(self, poly: Sequence[Lin], k: int) -> bool:
        """Whether the (satisfiable) ``poly`` lies inside the union of the bad pieces
        from the ``k``-th on: the parts of it outside piece ``k`` (one convex part
        per constraint of the piece) must lie inside the union of the later ones."""
        pieces = self.bad.pieces
        if k == len(pieces):
            return False
        pz = self.ts.pz
        acc: list[Lin] | None = list(poly)
        for c in pieces[k]:
            assert acc is not None
            if c in acc:
                continue
            out = pz.conj(acc, [c.negate()])
            if out is not None and not self._covered(out, k + 1):
                return False
            acc = pz.conj(acc, [c])
            if acc is None:
                return True
        return True

    def add_bad(self, params: list[Lin], prop: str) -> None:
        """Add a piece to the bad region (dropping the pieces it includes)."""
        for piece in self.bad.pieces:
            if included(self.ctx, params, piece):
                return
        keep = [i for i, piece in enumerate(self.bad.pieces)
                if not included(self.ctx, piece, params)]
        self.bad.pieces = [self.bad.pieces[i] for i in keep] + [params]
        self.bad_props = [self.bad_props[i] for i in keep] + [prop]

    def report(self, poly: Sequence[Lin], prop: str) -> None:
        """The parameters of ``poly`` are bad (``prop`` breaks there)."""
        params = self.ts.params(poly)
        if params is not None:
            self.add_bad(params, prop)

    def report_labels(self, labels: Sequence[Label]) -> bool:
        """Report the pieces of ``labels`` the target counts; whether one of them is a
        broken invariant (its state is not expanded)."""
        outright = False
        for lab in labels:
            assert isinstance(lab, PieceLabel)
            if not self.target.matches(lab.name):
                continue
            self.report(lab.piece, lab.name)
            outright = outright or lab.kind is LabelKind.INVARIANT
        return outright

    # ---- the goal --------------------------------------------------------------------------
    def reached(self, succ: Succ[Poly], node: int | None, parent: int, depth: int) -> None:
        """Report what a new state breaks (a covered one adds no bad parameters); queue
        it unless it breaks an invariant."""
        if succ.status is Status.ASSERT:
            if self.target.matches("assert"):
                self.report(succ.zone, "assert")  # the parameters where the edge fires
        elif succ.status is Status.TIMELOCK:
            self.report_labels(succ.labels)
        elif node is not None:
            if self.query is not None:
                self.report_query(succ.state, succ.zone)
                self.waiting.push(node)
                return
            labels = succ.deferred() if succ.deferred is not None else succ.labels
            if not self.report_labels(labels):
                self.waiting.push(node)

    def report_query(self, s: State, zone: Poly) -> None:
        """With a query target: the parameters of the part of ``zone`` (time-closed)
        where the query holds, for each convex clock part of it."""
        dz = self.ts.pz
        for m in query_matches(self.ts.model, s):
            if m.query != self.query:
                continue
            for part in m.parts:
                z = zone if not part else dz.constrain(dz.frame(s), zone, part)
                if z is not None:
                    self.report(z, self.target.name)

    def expand(self, node: int) -> bool:
        """Skip a state whose parameters are all bad already; report its deadlocks."""
        z = self.store.zone[node]
        if self.bad.pieces:
            params = self.ts.params(z)
            if params is None or self.covered(params):
                return False
        self.report_labels(self.ts.deadlocks(self.store.state[node], z))
        return True

    def exhausted(self) -> None:
        """Every reachable symbolic state was explored."""
        return None


def _synth(model: TimedModel, free: Sequence[str], base: Sequence[Lin], limits: Limits,
           symmetry: bool, deadlock: bool = True,
           progress: Callable[[Stats], None] | None = None,
           target: Target = EVERY_PROPERTY, merge: bool = True) -> SynthResult:
    """EFsynth: :func:`covreach` over the parametric zone graph with :class:`BadRegion`
    (merging symbolic states unless ``merge`` is False); the result is complete unless a
    limit ended the run."""
    free = list(free)
    ctx = Z3Context()
    ctx.shortcuts = Shortcuts([param_var(p) for p in free], probe_points(model, free))
    budget = Budget(limits, progress=progress)
    ctx.deadline = budget.deadline
    ms = limits.max_states
    cap = None if ms is None else max(10_000, 50 * ms)
    live = live_clocks(model, cap, budget.deadline)
    pz = PolyZones(model, free, ctx, live, canonizer(model, symmetry))
    ranges = range_constraints(model, free)
    query = None
    if target.kind is TargetKind.QUERY:
        names = list(getattr(model, "query_names", ()))
        if target.name not in names:
            raise ValueError(f"no `reachable {target.name}` query in the model")
        query = names.index(target.name)
        deadlock = False
    elif target.kind is TargetKind.PROPERTY:
        deadlock = deadlock and target.name == "deadlock"
    ts = PolyTS(model, pz, [*ranges, *base], deadlock, budget.check_time)
    store: Passed[Poly] = Passed(ts.includes, keep_shallower=False,
                                 merge=ts.merge if merge else None)
    waiting = waiting_list("bfs")
    goal = BadRegion(ts, store, waiting, target, query)
    for observe in STATS_OBSERVERS:
        observe(store.stats)
    limit = None
    try:
        covreach(ts, store, waiting, goal, budget)
    except LimitHit as lim:
        limit = lim.what
    except OutOfTime:
        limit = "time limit reached"
    st = store.stats
    stats = SynthStats(st.states, st.stored, st.transitions, ctx.queries,
                       time.monotonic() - budget.start, st.zones, st.merges)
    return SynthResult(limit is None, free, ranges, goal.bad, stats, limit,
                       dict(enumerate(goal.bad_props)))


def explore_parametric(
    model: TimedModel,
    free: Sequence[str],
    base: Sequence[Lin] = (),
    max_states: int | None = None,
    timeout: float | None = None,
    symmetry: bool = True,
    deadlock: bool = True,
    max_memory_mb: int | None = None,
    progress: Callable[[Stats], None] | None = None,
    target: Target = EVERY_PROPERTY,
    merge: bool = True,
) -> SynthResult:
    """The bad parameter region of ``model`` over ``free`` (others at their values).

    ``base`` restricts the parameters explored (e.g. an assumption); ``deadlock``
    makes deadlocks bad too; ``progress`` is called about once a second with the
    exploration's statistics; ``target``: one property only, or a ``reachable``
    query, whose "bad" region is then the values for which it is reachable; ``merge``:
    merge symbolic states whose union is convex (the region is the same either way).
    Raises SolverUnknown if Z3 cannot decide a query.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    limits = Limits(max_states=max_states, max_memory_mb=max_memory_mb, deadline=deadline)
    return _synth(model, free, base, limits, symmetry, deadlock, progress, target, merge)


__all__ = [
    "EVERY_PROPERTY",
    "Coverage",
    "Region",
    "SolverUnknown",
    "SynthResult",
    "SynthStats",
    "Target",
    "TargetKind",
    "admits",
    "explore_parametric",
    "range_constraints",
]


# ---- presenting regions ---------------------------------------------------------------------


def _term(a: Fraction, name: str) -> str:
    if a == 1:
        return name
    return f"{_num(a)}*{name}"


def _ordered(terms: list[tuple[str, Fraction]], order: Sequence[str]
             ) -> list[tuple[str, Fraction]]:
    rank = {param_var(p): i for i, p in enumerate(order)}
    return sorted(terms, key=lambda t: (rank.get(t[0], len(rank)), t[0]))


def _num(x: Fraction) -> str:
    from checker.model.trace import fmt_time

    return fmt_time(x)


def _side(terms: list[tuple[str, Fraction]], const: Fraction = Fraction(0)) -> str:
    parts = [_term(a, v.removeprefix("p:")) for v, a in terms]
    if not parts:
        return _num(const)
    text = " + ".join(parts)
    if const > 0:
        text += f" + {_num(const)}"
    elif const < 0:
        text += f" - {_num(-const)}"
    return text


_FLIP_OP = {"<": ">", "<=": ">="}


def lin_text(c: Lin, order: Sequence[str] = ()) -> str:
    """A parameter constraint as a person writes it, e.g. ``T_hold > T_prop + T_flight``
    or ``T_a < 1/3`` (terms in the parameters' declaration ``order``; exact numbers).

    Coefficients are whole numbers (``2*D <= G``, not ``D <= 0.5*G``); the side with
    fewer terms comes first, and of two sides with as many terms the one whose
    coefficients are all 1 (``G >= 2*D``)."""
    coefs, const = c.coefs, c.const
    scale = math.lcm(*(a.denominator for _, a in coefs)) if coefs else 1
    if scale != 1:
        coefs = tuple((v, a * scale) for v, a in coefs)
        const = const * scale
    pos = _ordered([(v, a) for v, a in coefs if a > 0], order)
    neg = _ordered([(v, -a) for v, a in coefs if a < 0], order)
    op = "<" if c.strict else "<="
    # The constraint reads: pos + const  op  neg.
    if not neg:
        return f"{_side(pos)} {op} {_side([], -const)}"
    if not pos:
        return f"{_side(neg)} {_FLIP_OP[op]} {_side([], const)}"
    neg_first = len(neg) < len(pos)
    if len(neg) == len(pos):
        unit_pos = all(a == 1 for _, a in pos)
        unit_neg = all(a == 1 for _, a in neg)
        if unit_pos != unit_neg:
            neg_first = unit_neg
        elif const != 0:
            neg_first = const > 0  # the constant added on the right: `T > U + 4`
        else:
            neg_first = neg[0][0] < pos[0][0]
    if neg_first:
        return f"{_side(neg)} {_FLIP_OP[op]} {_side(pos, const)}"
    return f"{_side(pos)} {op} {_side(neg, -const)}"


def essential(ctx: Z3Context, piece: Sequence[Lin], ranges: Sequence[Lin]) -> list[Lin]:
    """``piece`` without the constraints the ranges (and the rest of it) imply."""
    kept = [c for c in piece if c not in set(ranges)]
    i = 0
    while i < len(kept):
        others = [*ranges, *kept[:i], *kept[i + 1:]]
        if not ctx.sat([*others, kept[i].negate()]):
            kept.pop(i)
        else:
            i += 1
    return kept


def coverage(result: SynthResult) -> Coverage | None:
    """How much of the ranges the safe region covers; None when the run was cut short
    and the bad region found so far leaves some values open (the rest of the
    exploration could still make them bad).  Every bad piece is a real violation, so a
    bad region that already covers the ranges makes ``none`` final either way."""
    if not result.bad.pieces:
        return Coverage.ALL if result.complete else None
    ctx = Z3Context()
    outside = [z3.Not(z3.And(*[ctx.expr(c) for c in piece])) for piece in result.bad.pieces]
    if not ctx.sat(result.ranges, outside):
        return Coverage.NONE
    return Coverage.SOME if result.complete else None


def reach_coverage(result: SynthResult) -> Coverage | None:
    """With a query target: how much of the ranges the values for which it is reachable
    cover (the pieces found are real: ``all`` is final even when a limit was hit)."""
    if not result.bad.pieces:
        return Coverage.NONE if result.complete else None
    if coverage(result) is Coverage.NONE:
        return Coverage.ALL
    return Coverage.SOME if result.complete else None


def reach_region(result: SynthResult) -> list[list[Lin]]:
    """With a query target: the values for which it is reachable, as a union (DNF) of
    convex pieces, each without the constraints the ranges imply.  ``[]`` is "no
    value"; ``[[]]`` is "every value"."""
    if reach_coverage(result) is Coverage.ALL:
        return [[]]
    ctx = Z3Context()
    return sorted(sorted(essential(ctx, piece, result.ranges)) for piece in result.bad.pieces)


def dnf_text(dnf: Sequence[Sequence[Lin]], order: Sequence[str] = ()) -> str:
    """A DNF region as readable text."""
    if not dnf:
        return "false"
    if any(not piece for piece in dnf):
        return "true"
    parts = []
    for piece in dnf:
        text = " and ".join(lin_text(c, order) for c in piece)
        parts.append(f"({text})" if len(piece) > 1 and len(dnf) > 1 else text)
    return " or ".join(parts)


def safe_region(result: SynthResult) -> list[list[Lin]]:
    """The safe region as a conjunction of disjunctions of constraints (CNF) — to be
    read together with the ranges.  ``[]`` is "every value"; ``[[]]`` is "none" (also
    when the bad pieces cover the ranges only together)."""
    if coverage(result) is Coverage.NONE:
        return [[]]
    ctx = Z3Context()
    cnf: list[list[Lin]] = []
    for piece in result.bad.pieces:
        core = essential(ctx, piece, result.ranges)
        cnf.append(sorted(c.negate() for c in core))
    return sorted(cnf)


def region_text(cnf: Sequence[Sequence[Lin]], order: Sequence[str] = ()) -> str:
    """A CNF region as readable text."""
    if not cnf:
        return "true"
    if any(not clause for clause in cnf):
        return "false"
    parts = []
    for clause in cnf:
        text = " or ".join(lin_text(c, order) for c in clause)
        parts.append(f"({text})" if len(clause) > 1 and len(cnf) > 1 else text)
    return " and ".join(parts)


def _param_z3(c: Lin) -> z3.BoolRef:
    """A parameter constraint as a Z3 formula over Reals named after the parameters."""
    term: z3.ArithRef = z3.RealVal(str(c.const))
    for v, a in c.coefs:
        term = term + z3.RealVal(str(a)) * z3.Real(v.removeprefix("p:"))
    return term < 0 if c.strict else term <= 0


def region_z3(cnf: Sequence[Sequence[Lin]], ranges: Sequence[Lin]) -> z3.BoolRef:
    """The region (within the ranges) as a Z3 formula over Reals named after the
    parameters."""
    ctx = Z3Context()
    ctx.vars = {}
    clauses = [z3.Or(*[_param_z3(c) for c in clause]) if clause else z3.BoolVal(False)
               for clause in cnf]
    return z3.And(*[_param_z3(c) for c in ranges], *clauses)


def formula_z3(f: LinFormula) -> z3.BoolRef:
    """A region formula (:data:`~checker.smt.lin.LinFormula`) as a Z3 formula over
    Reals named after the parameters."""
    if isinstance(f, bool):
        return z3.BoolVal(f)
    if isinstance(f, Lin):
        return _param_z3(f)
    op, parts = f
    args = [formula_z3(p) for p in parts]
    if op == "not":
        return z3.Not(args[0])
    return z3.And(*args) if op == "and" else z3.Or(*args)


def region_difference(cnf: Sequence[Sequence[Lin]], ranges: Sequence[Lin],
                      expected: LinFormula, free: Sequence[str]
                      ) -> tuple[dict[str, Fraction], bool] | None:
    """Whether a synthesised region (``cnf``, read with the ``ranges``) is the
    ``expected`` one within the ranges: ``None`` when they are equivalent, else a
    point of the ``free`` parameters inside the ranges and inside exactly one of the
    two, and whether that one is the synthesised region.  Raises SolverUnknown when
    Z3 cannot decide."""
    inside = z3.And(*[_param_z3(c) for c in ranges])
    found = region_z3(cnf, ())
    exp = formula_z3(expected)
    for in_found, goal in ((True, z3.And(found, z3.Not(exp))),
                           (False, z3.And(exp, z3.Not(found)))):
        solver = z3.Solver()
        solver.set("random_seed", 0)
        solver.set("timeout", 60_000)
        solver.add(inside, goal)
        answer = solver.check()
        if answer == z3.unknown:
            raise SolverUnknown(f"comparing regions: {solver.reason_unknown()}")
        if answer == z3.sat:
            model = solver.model()
            point = {p: _to_fraction(model.eval(z3.Real(p), model_completion=True))
                     for p in free}
            return point, in_found
    return None


def same_safe_values(a: SynthResult, b: SynthResult, within: Sequence[Lin] = ()) -> bool:
    """Whether two complete syntheses over the same free parameters call the same values
    safe inside ``within`` and both results' ranges (e.g. a run without the spec's
    ``assume`` constraints against one with them, ``within`` the constraints)."""
    ctx = Z3Context()

    def bad(r: SynthResult) -> z3.BoolRef:
        return z3.Or(*[z3.And(*[ctx.expr(c) for c in piece]) for piece in r.bad.pieces]) \
            if r.bad.pieces else z3.BoolVal(False)

    domain = [*a.ranges, *b.ranges, *within]
    return not ctx.sat(domain, [bad(a) != bad(b)])


def dnf_smtlib(dnf: Sequence[Sequence[Lin]], ranges: Sequence[Lin], free: Sequence[str]
               ) -> str:
    """A DNF region (within the ranges) as an SMT-LIB script."""
    decls = "".join(f"(declare-const {p} Real)\n" for p in free)
    return decls + f"(assert {dnf_z3(dnf, ranges).sexpr()})\n"


def dnf_z3(dnf: Sequence[Sequence[Lin]], ranges: Sequence[Lin]) -> z3.BoolRef:
    """A DNF region (within the ranges) as a Z3 formula over Reals named after the
    parameters."""
    pieces = [region_z3([[c] for c in piece], []) for piece in dnf]
    return z3.And(region_z3([], ranges), z3.Or(*pieces) if pieces else z3.BoolVal(False))


def region_smtlib(cnf: Sequence[Sequence[Lin]], ranges: Sequence[Lin], free: Sequence[str]
                  ) -> str:
    """The region as an SMT-LIB script (declarations and one assertion)."""
    decls = "".join(f"(declare-const {p} Real)\n" for p in free)
    return decls + f"(assert {region_z3(cnf, ranges).sexpr()})\n"


SIMPLE_GAPS: tuple[Fraction | None, ...] = (Fraction(1), Fraction(1, 2), Fraction(1, 10),
                                           Fraction(1, 1000), None)
NEAR_GAPS: tuple[Fraction | None, ...] = (Fraction(1, 1000), Fraction(1, 10**6))


def nearest_point(ctx: Z3Context, cons: Sequence[Lin], extra: Sequence[z3.BoolRef],
                  free: Sequence[str], defaults: Mapping[str, Fraction],
                  gaps: Sequence[Fraction | None] = SIMPLE_GAPS
                  ) -> dict[str, Fraction] | None:
    """A point of the region closest (L1) to ``defaults``.  Strict constraints are
    tightened by each of ``gaps`` in turn (``None``: kept strict), so the first
    gaps prefer points with simple numbers away from open boundaries."""
    names = [param_var(p) for p in free]
    for gap in gaps:
        opt = z3.Optimize()
        opt.set("timeout", 20_000)
        for c in cons:
            if c.strict and gap is not None:
                c = Lin(c.coefs, c.const + gap, False)
            opt.add(ctx.expr(c))
        for x in extra:
            opt.add(x)
        dist = []
        for p, n in zip(free, names, strict=True):
            v = ctx.var(n)
            d = z3.Real(f"dist_{p}")
            opt.add(d >= v - z3.RealVal(str(defaults[p])), d >= z3.RealVal(str(defaults[p])) - v)
            dist.append(d)
        if dist:
            opt.minimize(z3.Sum(*dist))
        r = opt.check()
        if r == z3.sat:
            m = opt.model()
            out = {}
            for p, n in zip(free, names, strict=True):
                val = m.eval(ctx.var(n), model_completion=True)
                out[p] = Fraction(val.numerator_as_long(), val.denominator_as_long())
            return out
        if r == z3.unknown:
            raise SolverUnknown(opt.reason_unknown())
    return None


@dataclass
class ProveResult:
    """The outcome of ``prove``: whether the assumption implies safety."""

    status: ProofStatus
    synth: SynthResult
    counterexample: dict[str, Fraction] | None = None
    """Parameter values inside the assumption where a property breaks."""
    boundary: dict[str, Fraction] | None = None
    """When proved: values on the assumption's boundary (just outside it) where a
    property breaks — the bound is tight."""
    near: dict[str, Fraction] | None = None
    """When proved and tight although no violation lies on the boundary itself
    (the bad region is open there): a violation within 1/1000 (or less) of it."""
    outside: dict[str, Fraction] | None = None
    """When proved but not tight: the violation outside the assumption closest to
    the defaults, if there is one at all."""
    vacuous: bool = False
    """The assumption admits no parameter value inside the ranges."""


def prove(model: TimedModel, assumption: Sequence[Lin], free: Sequence[str],
          max_states: int | None = None, timeout: float | None = None,
          deadlock: bool = True) -> ProveResult:
    """Whether every property holds for every valuation of ``free`` in the ranges
    that satisfies ``assumption`` (a conjunction)."""
    result = explore_parametric(model, free, (), max_states, timeout, deadlock=deadlock)
    ctx = Z3Context()
    defaults = {p: model.values[p] for p in free}
    inside = [*result.ranges, *assumption]
    for piece in result.bad.pieces:
        point = nearest_point(ctx, [*inside, *piece], [], free, defaults)
        if point is not None:
            return ProveResult(ProofStatus.REFUTED, result, counterexample=point)
    if not result.complete:
        return ProveResult(ProofStatus.INCONCLUSIVE, result)
    vacuous = not ctx.sat(inside)
    closure = [Lin(c.coefs, c.const, False) for c in assumption]
    outside = z3.Or(*[ctx.expr(c.negate()) for c in assumption]) if assumption else \
        z3.BoolVal(False)
    for piece in result.bad.pieces:
        point = nearest_point(ctx, [*result.ranges, *closure, *piece], [outside], free,
                              defaults)
        if point is not None:
            return ProveResult(ProofStatus.PROVED, result, boundary=point, vacuous=vacuous)
    for piece in result.bad.pieces:
        # Violations arbitrarily close to the boundary: the closures touch.
        touch = nearest_point(ctx, _closed([*result.ranges, *closure, *piece]), [], free,
                              defaults)
        if touch is None:
            continue
        point = nearest_point(ctx, [*result.ranges, *piece], [outside], free, touch,
                              NEAR_GAPS)
        if point is not None:
            return ProveResult(ProofStatus.PROVED, result, near=point, vacuous=vacuous)
    for piece in result.bad.pieces:
        point = nearest_point(ctx, [*result.ranges, *piece], [outside], free, defaults)
        if point is not None:
            return ProveResult(ProofStatus.PROVED, result, outside=point, vacuous=vacuous)
    return ProveResult(ProofStatus.PROVED, result, vacuous=vacuous)


def _closed(cons: Sequence[Lin]) -> list[Lin]:
    """The topological closure of a conjunction: every strict constraint relaxed."""
    return [Lin(c.coefs, c.const, False) for c in cons]


def trace_region(model: TimedModel, shape: TraceShape, free: Sequence[str]) -> list[Lin]:
    """The exact parameter region (over ``free``, within the ranges; others at their
    values) in which the trace's sequence of events is feasible: the trace's
    timing constraints (:func:`checker.model.timeline.timeline` over timestamps
    ``t0, t1, ...``) with every timestamp projected out (Fourier–Motzkin).
    Returns the essential constraints (those the ranges do not imply)."""
    bounds = [bound_lin(b, free, model.values) for b in model.bounds]
    ranges = range_constraints(model, free)
    cons: list[Lin] = [Lin.make({"t0": Fraction(1)}, Fraction(0), False),
                       Lin.make({"t0": Fraction(-1)}, Fraction(0), False)]
    now = 0
    last_reset: dict[int, int] = {}

    def atom(a: ClockAtom) -> Lin:
        coefs, const = bounds[a.bound]
        # clock value = t_now - t_since (t0 = 0 when never reset)
        lhs: dict[str, Fraction] = {f"t{now}": Fraction(1)}
        since = last_reset.get(a.clock)
        if since is not None:
            lhs[f"t{since}"] = lhs.get(f"t{since}", Fraction(0)) - 1
        if a.op in (LE, LT):
            cs = dict(lhs)
            for k, v in coefs.items():
                cs[k] = cs.get(k, Fraction(0)) - v
            return Lin.make(cs, -const, a.op == LT)
        cs = {k: -v for k, v in lhs.items()}
        for k, v in coefs.items():
            cs[k] = cs.get(k, Fraction(0)) + v
        return Lin.make(cs, const, a.op == GT)

    for op in timeline(model, shape):
        if isinstance(op, Elapse):
            cons.append(Lin.make({f"t{now}": Fraction(1), f"t{now + 1}": Fraction(-1)},
                                 Fraction(0), False))
            now += 1
        elif isinstance(op, Reset):
            for c in op.clocks:
                last_reset[c] = now
        else:
            cons.extend(atom(a) for a in op.atoms)
    ctx = Z3Context()
    cur = dedupe([*cons, *ranges])
    if cur is None or not ctx.sat(cur):
        return [Lin((), Fraction(1), False)]
    times = sorted({v for c in cur for v in c.vars() if v.startswith("t")},
                   key=lambda v: -int(v[1:]))
    for v in times:
        got = eliminate(cur, v)
        if got is None:
            return [Lin((), Fraction(1), False)]
        cur = remove_redundant(ctx, got)
    return essential(ctx, cur, ranges)

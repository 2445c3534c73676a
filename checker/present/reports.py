"""What ``synth``, ``prove`` and ``simulate`` found, gathered for presentation:
:mod:`checker.present.text` and :mod:`checker.present.jsonout` print these."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

from checker.results import Coverage, ProofStatus, Verdict

if TYPE_CHECKING:
    from checker.api import Outcome
    from checker.model.provenance import Source
    from checker.simulate import SimConfig
    from checker.simulate.plot import Threshold
    from checker.simulate.runner import SimResult
    from checker.smt.synth import SynthStats


@dataclass
class SynthReport:
    """What ``synth`` found, in the words it prints (the region already as text)."""

    model: str
    free: list[str]
    fixed: dict[str, Fraction]
    """The parameters at their values (not synthesised)."""
    ranges: str
    """The free parameters' declared ranges, ``T in [0, 10], ...``."""
    complete: bool
    limit: str | None
    region: str
    """The safe region (``true``, ``false`` or a formula)."""
    smtlib: str | None
    bad: list[list[str]]
    """The unsafe pieces found (each a conjunction of constraints)."""
    stats: SynthStats
    no_deadlock: bool
    liveness: int = 0
    """How many unbounded liveness properties the spec declares (not covered)."""
    coverage: Coverage | None = None
    """How much of the ranges the safe region covers (with :attr:`query`: the region in
    which the query is reachable); None when not known (a limit)."""
    property: str | None = None
    """With ``--property``: the one property the region is about."""
    query: str | None = None
    """With ``--query``: the ``reachable`` query; :attr:`region` is where it is reachable
    and :attr:`bad` what was found reachable so far."""
    provenance: list[tuple[str, list[Source]]] = field(default_factory=list)
    """Each constraint of the printed region with the model elements whose bounds mention
    its parameters (:mod:`checker.model.provenance`)."""
    show_provenance: bool = False
    """Whether the text output lists :attr:`provenance` (``--provenance``)."""
    project: list[str] | None = None
    """With ``--project``: the parameters :attr:`region` is projected onto (the other
    free parameters existentially quantified)."""


@dataclass
class ProveReport:
    """What ``prove`` found; parameter points are full valuations."""

    model: str
    assume: str
    free: list[str]
    fixed: dict[str, Fraction]
    status: ProofStatus
    witness: Outcome | None
    """When refuted: the concrete check at :attr:`counterexample`."""
    counterexample: dict[str, Fraction] | None
    boundary: dict[str, Fraction] | None
    near: dict[str, Fraction] | None
    outside: dict[str, Fraction] | None
    vacuous: bool
    limit: str | None
    stats: SynthStats
    no_deadlock: bool
    liveness: int = 0
    """How many unbounded liveness properties the spec declares (not covered)."""

    @property
    def confirmed(self) -> bool:
        """Refuted, and the concrete check at the counterexample breaks a property too."""
        return (self.status is ProofStatus.REFUTED and self.witness is not None
                and self.witness.verdict in (Verdict.VIOLATED, Verdict.ERROR))


@dataclass(frozen=True)
class Sweep:
    """The points of ``simulate --sweep``: one parameter, its values in order."""

    name: str
    values: list[Fraction]


@dataclass
class SimReport:
    """What ``simulate`` estimated: one result, or one per point of the sweep."""

    model: str
    shown: dict[str, Fraction]
    """The parameter values to show (the swept one left out)."""
    cfg: SimConfig
    runs: int
    seed: int
    results: list[SimResult]
    sweep: Sweep | None
    threshold: Threshold | None
    """With a sweep: the exact safe bound on the swept parameter, by synthesis."""
    synth: bool
    """Whether synthesis was asked for (``--no-synth`` not given)."""

    @property
    def any_violation(self) -> bool:
        """Whether some run violated a property."""
        return any(r.violations for r in self.results)

"""Translations of a spec for other model checkers (``kvrace export``).

* :mod:`checker.export.network` — a network of processes, one per actor (TChecker's
  default form), as terms (:mod:`checker.export.terms`), printed for TChecker;
* :mod:`checker.export.uppaal` — the same network as UPPAAL's XML;
* :mod:`checker.export.flat` — one flat automaton over the discrete states
  (``--flat``; UPPAAL's and TChecker's), re-exported here.

Every translation walks the compiled model or its IR only: it never runs an engine.
"""

from checker.export.flat import (
    MAX_CONSTANT,
    MAX_LOCATIONS,
    UPPAAL_DOCTYPE,
    Automaton,
    ExportError,
    Transition,
    tchecker_text,
    unfold,
    uppaal_xml,
)

__all__ = ["MAX_CONSTANT", "MAX_LOCATIONS", "UPPAAL_DOCTYPE", "Automaton", "ExportError",
           "Transition", "tchecker_text", "unfold", "uppaal_xml"]

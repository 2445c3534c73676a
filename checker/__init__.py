"""kvrace: model checking of release protocols for remotely written memory.

The package is split by phase, with dependencies pointing one way:

* ``checker.diagnostics`` — positioned error messages shared by every phase;
* ``checker.language``  — the ``.kvr`` grammar, parser and elaborator (the only user of lark);
* ``checker.model``     — the typed model, its compiled runtime form and the small
  interface every engine depends on;
* ``checker.limits``    — the resource budget every phase honours;
* ``checker.domains``   — zone domains: difference-bound matrices (pure Python and C);
* ``checker.semantics`` — the symbolic transition system of a model over a zone domain,
  with its clock bounds, symmetry and traces;
* ``checker.algorithms`` — covering reachability and Büchi liveness over such a system;
* ``checker.engines``   — the algorithms wired to a model: the zone explorer of ``check``
  and its distributed form;
* ``checker.smt``       — the Z3 layer (the only user of z3): polyhedra, the parametric
  engine of ``prove``/``synth``, and timestamps;
* ``checker.api``       — the Python API: run a command's engine, get a typed result;
* ``checker.present``   — what results look like: text, JSON and DOT (it runs no engine);
* ``checker.export``    — translations for TChecker and UPPAAL (no engine either);
* ``checker.cli``       — the ``kvrace`` command: a parser and one module per command.
"""

__version__ = "0.1.0"


def version() -> str:
    """The installed package's version (its metadata), or the source tree's."""
    from importlib import metadata

    try:
        return metadata.version("kvrace")
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return __version__

"""What results look like: the text kvrace prints, the JSON contract, and the DOT
diagrams.

* :mod:`checker.present.text` — verdicts, statistics and summaries as text;
* :mod:`checker.present.jsonout` — the ``--json`` envelope and each command's fields
  (``docs/schema/kvrace-output-1.schema.json``);
* :mod:`checker.present.dot` — sequence diagrams of traces and drawings of state
  graphs, rendered by Graphviz;
* :mod:`checker.present.reports` — what ``synth``, ``prove`` and ``simulate``
  found, as the two above print it;
* :mod:`checker.present.cases` — what ``check`` found about each property, and
  ``lint`` about each file, for the CI reports:
  :mod:`checker.present.junit` (JUnit XML) and :mod:`checker.present.sarif`
  (SARIF 2.1.0).

This package only sees result objects (:class:`~checker.api.Outcome`, the
statistics, the reports): it never builds a model or runs an engine, and imports
neither z3 nor lark.
"""

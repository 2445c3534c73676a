"""The interactive viewer: a counterexample step by step, and a simulator, in a browser.

* :mod:`checker.view.steps` turns a run of a model into what the page shows
  (state table, changes, clocks, zone, enabled events with their windows);
* :mod:`checker.view.page` writes the page: one self-contained HTML file, or
  the page the server sends (the JavaScript and CSS are package data under
  ``checker/view/static``);
* :mod:`checker.view.server` serves the page and computes successors for the
  simulator (``kvrace view SPEC``).

The viewer is an application layer, like the command line: it may run the model
and the explorer's trace replay; :mod:`checker.present.dot` never does.
"""

"""Specs as tests: the expectations a spec's comments state (:mod:`.expect`), the runs
that decide them (:mod:`.run`), and the pytest plugin that collects such specs
(:mod:`.pytest_plugin`, opt-in: ``kvrace_specs = true`` or ``--kvrace-specs``)."""

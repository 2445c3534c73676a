"""A pytest plugin: ``*.kvr`` specs that state expectations in their comments are
collected as tests (see :mod:`checker.testing.expect` for the ``# expect`` lines).

It is registered through the ``pytest11`` entry point, so installing kvrace makes it
available to every pytest run, but it collects nothing until a project turns it on:
``kvrace_specs = true`` in its pytest configuration, or ``--kvrace-specs`` on the
command line.  Then each spec with expectations under the collected paths is a
collector with one item per expectation: ``spec.kvr::check`` (the verdict),
``spec.kvr::NAME`` (a property or a query), ``spec.kvr::region`` (``synth``'s safe
region).  ``check`` runs once per spec (in each worker that runs one of its items);
a failure shows what was expected, what was found and the counterexample.
``kvrace_timeout`` (seconds, default 600) bounds each run: a run cut short is
inconclusive, never a pass.

The engines are imported when an item runs: loading the plugin costs nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from checker.testing import expect as ex

if TYPE_CHECKING:
    from checker.model import ir
    from checker.testing.run import SpecRun

INI_ENABLE = "kvrace_specs"
INI_TIMEOUT = "kvrace_timeout"
DEFAULT_TIMEOUT = 600.0


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--kvrace-specs``, ``kvrace_specs`` and ``kvrace_timeout``."""
    group = parser.getgroup("kvrace", "kvrace specs as tests")
    group.addoption("--kvrace-specs", action="store_true", default=False,
                    help="collect *.kvr specs that carry `# expect` comments")
    parser.addini(INI_ENABLE, type="bool", default=False,
                  help="collect *.kvr specs that carry `# expect` comments")
    parser.addini(INI_TIMEOUT, default=str(DEFAULT_TIMEOUT),
                  help="seconds each kvrace run of a spec may take (default 600)")


def _enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("--kvrace-specs") or config.getini(INI_ENABLE))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> SpecFile | None:
    """A collector for a ``.kvr`` file with expectations, when the plugin is on."""
    if file_path.suffix != ".kvr" or not _enabled(parent.config):
        return None
    try:
        text = file_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if not ex.has_expectations(text):
        return None
    spec_file: SpecFile = SpecFile.from_parent(parent, path=file_path)
    return spec_file


class SpecFailure(Exception):
    """An expectation the run did not meet: its text is the whole report."""


class SpecFile(pytest.File):
    """A spec with expectations: its items, and the one ``check`` run they share."""

    _run: SpecRun | None = None
    _spec: ir.Spec | None = None
    _expectations: ex.Expectations | None = None

    def _timeout(self) -> float:
        raw = str(self.config.getini(INI_TIMEOUT))
        try:
            value = float(raw)
        except ValueError:
            raise pytest.UsageError(f"{INI_TIMEOUT} = {raw}: not a number of seconds"
                                    ) from None
        if not value > 0:
            raise pytest.UsageError(f"{INI_TIMEOUT} = {raw}: must be above 0")
        return value

    def collect(self) -> Iterator[SpecItem]:
        """One item per expectation, in the file's order."""
        text = self.path.read_text(encoding="utf-8", errors="replace")
        self._expectations = ex.parse(text, self._shown())
        for e in self._expectations.items:
            yield SpecItem.from_parent(self, name=e.name, expectation=e)

    def _shown(self) -> str:
        """The path as reports show it: relative to the root directory when under it."""
        try:
            return str(self.path.relative_to(self.config.rootpath))
        except ValueError:
            return str(self.path)

    def spec(self) -> ir.Spec:
        """The elaborated spec (with the structural constants ``# expect params:``
        sets); raises :class:`SpecFailure` with its diagnostics."""
        if self._spec is None:
            from checker.diagnostics import SpecError
            from checker.language import load

            assert self._expectations is not None
            try:
                spec = load(self.path, self._expectations.params or None)
            except SpecError as e:
                raise SpecFailure(e.render()) from None
            ex.check_names(spec, self._expectations, self._shown())
            self._spec = spec
        return self._spec

    def params(self) -> dict[str, Fraction]:
        """The timing parameters ``# expect params:`` sets (not the structural
        constants, which :meth:`spec` took)."""
        assert self._expectations is not None
        consts = {c.name for c in self.spec().consts}
        return {k: v for k, v in self._expectations.params.items() if k not in consts}

    def run(self) -> SpecRun:
        """The ``check`` run of this spec (made once)."""
        if self._run is None:
            from checker.model.compiled import ParamError
            from checker.testing.run import check_spec

            try:
                self._run = check_spec(self.spec(), self.params(), self._timeout())
            except ParamError as e:
                raise SpecFailure(f"{self._shown()}: `# expect params:`: {e}") from None
        return self._run

    def region_mismatch(self, expected: str) -> str | None:
        """Why ``synth``'s region is not ``expected``, or None."""
        from checker.diagnostics import SpecError
        from checker.model.compiled import ParamError
        from checker.testing.run import region_mismatch

        try:
            return region_mismatch(self.spec(), self.params(), expected, self._timeout())
        except SpecError as e:
            raise SpecFailure(f"`# expect region:` does not parse:\n{e.render()}") from None
        except ParamError as e:
            raise SpecFailure(f"{self._shown()}: `# expect params:`: {e}") from None

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: str | None = None) -> str:
        """A malformed expectation is reported as its one line, not a traceback."""
        if isinstance(excinfo.value, ex.ExpectationError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))


class SpecItem(pytest.Item):
    """One expectation of a spec."""

    def __init__(self, *, expectation: ex.Expectation, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.expectation = expectation
        # No fixtures.  Some plugins' call hooks expect every item to have this (the
        # pytest_runtest_call wrapper of pytest-lsp 1.0 fails an item without it).
        self.funcargs: dict[str, object] = {}

    @property
    def spec_file(self) -> SpecFile:
        """The spec's collector (which holds the shared run)."""
        assert isinstance(self.parent, SpecFile)
        return self.parent

    def runtest(self) -> None:
        """Run (or reuse) the spec's check, or its synthesis, and judge."""
        e = self.expectation
        parent = self.spec_file
        if e.kind is ex.ExpectKind.REGION:
            why = parent.region_mismatch(e.word)
        else:
            run = parent.run()
            if e.kind is ex.ExpectKind.VERDICT:
                why = ex.judge_verdict(e, run.verdict, run.report)
            else:
                why = ex.judge_property(e, run.cases)
        if why is not None:
            raise SpecFailure(f"{parent._shown()}:{e.line}: {why}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: str | None = None) -> str:
        """An unmet expectation shows the report (with the trace), not a traceback."""
        if isinstance(excinfo.value, (SpecFailure, ex.ExpectationError)):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where the expectation is written: the file and its line."""
        return self.path, self.expectation.line - 1, f"kvrace: {self.name}"

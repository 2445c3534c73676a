"""Build hook for kvrace's optional C extension; the metadata is in pyproject.toml.

``checker.domains._cdbm`` is the compiled core of the DBM operations
(``checker/domains/_cdbm.c``).  It is optional: when it cannot be built (no C
compiler, no Python headers, ...) the installation still succeeds, with a warning,
and the explorer uses the pure-Python ``checker.domains.dbm``.
"""

from __future__ import annotations

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import BaseError, CCompilerError

# Everything a failed or impossible compilation raises: compile and link errors,
# a compiler that cannot be run (ExecError), no compiler for the platform
# (PlatformError), and the OS errors of spawning it.
_BUILD_ERRORS = (CCompilerError, BaseError, OSError)


class OptionalBuildExt(build_ext):
    """``build_ext`` that compiles with -O2 and skips, with a warning, what fails."""

    def run(self) -> None:
        try:
            super().run()
        except _BUILD_ERRORS as err:  # e.g. no compiler can even be set up
            self._skipped(err)

    def build_extension(self, ext: Extension) -> None:
        opt = "/O2" if self.compiler.compiler_type == "msvc" else "-O2"
        ext.extra_compile_args = [*ext.extra_compile_args, opt]
        try:
            super().build_extension(ext)
        except _BUILD_ERRORS as err:
            self._skipped(err)

    @staticmethod
    def _skipped(err: BaseException) -> None:
        print(
            f"WARNING: kvrace's C DBM core was not built ({err}); "
            "the pure-Python DBM operations will be used.",
            file=sys.stderr,
        )


setup(
    ext_modules=[
        Extension(
            "checker.domains._cdbm",
            sources=["checker/domains/_cdbm.c"],
            optional=True,  # setuptools' own guard, in addition to OptionalBuildExt
        )
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)

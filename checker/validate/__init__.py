"""Timed trace validation: whether a log of the running system is a run of its spec.

:mod:`checker.validate.log` reads JSON-lines logs, :mod:`checker.validate.mapping`
text logs through a mapping file, and :mod:`checker.validate.conform` follows the
set of symbolic states consistent with the log (zones with an absolute-time clock).
"""

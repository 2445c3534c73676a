"""The former name of :mod:`checker.present.dot` (DOT diagrams and rendering), kept
so that ``checker.render`` still imports: it is that module itself."""

import sys

from checker.present import dot as _dot

sys.modules[__name__] = _dot

"""The former name of :mod:`checker.present.jsonout` (the JSON contract), kept so
that ``checker.jsonout`` still imports: it is that module itself."""

import sys

from checker.present import jsonout as _jsonout

sys.modules[__name__] = _jsonout

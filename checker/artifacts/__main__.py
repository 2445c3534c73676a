"""``python -m checker.artifacts``: see :mod:`checker.artifacts`."""

import sys

from checker.artifacts import main

sys.exit(main())

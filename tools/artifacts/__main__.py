"""``python -m checker.artifacts``: see :mod:`checker.artifacts`."""

import sys

from tools.artifacts import main

sys.exit(main())

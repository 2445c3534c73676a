"""``python -m tools.artifacts``: see :mod:`tools.artifacts`."""

import sys

from tools.artifacts import main

sys.exit(main())

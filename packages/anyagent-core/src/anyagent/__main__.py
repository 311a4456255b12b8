"""``python -m anyagent``: the ``anyagent`` command."""

import sys

from .cli import main

sys.exit(main())

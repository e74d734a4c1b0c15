"""``python -m vizmm``: the ``vizmm`` command."""

import sys

from .cli import main

sys.exit(main())

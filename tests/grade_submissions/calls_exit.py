"""Calls sys.exit when it is loaded."""

import sys

sys.exit(3)

"""Allows `python -m hec`."""

import sys

from hec.cli import main

sys.exit(main())

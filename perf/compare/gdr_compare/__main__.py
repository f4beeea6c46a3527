"""python3 -m gdr_compare (from perf/compare): the same as perf/compare/run."""

import sys

from .cli import main

sys.exit(main())

"""`python -m bench.steps <step> '<json arguments>'`: one measured step in this process."""

from __future__ import annotations

import sys

from bench.steps import main

raise SystemExit(main(sys.argv[1:]))

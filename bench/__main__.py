from __future__ import annotations

from bench.runner import main

raise SystemExit(main())

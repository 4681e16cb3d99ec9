from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
application = get_wsgi_application()

# A web process: what it loads is tuned for many short requests at once (e.g. query encoding).
from memoryadmin.process import process_mark  # noqa: E402

process_mark("web")

# A production server without `collectstatic` would answer 500 on every page: refuse to start.
from memoryadmin.staticcheck import require_collected_static  # noqa: E402

require_collected_static()

# What start-up made lives as long as the process: out of the collector's way.
from memoryadmin.process import freeze_startup_objects  # noqa: E402

freeze_startup_objects()

"""memoryadmin settings: every value comes from the environment (see README, Configuration)."""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from celery.schedules import crontab

from memoryadmin.celery import task_queues
from memoryadmin.env import ConfigError, env_bool, env_int, env_list, env_networks, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("MEMORYADMIN_DEBUG", False)
# A development key is only acceptable with DEBUG on; production must set one.
_secret = env_str("MEMORYADMIN_SECRET_KEY")
if _secret is None:
    if not DEBUG:
        raise ConfigError("MEMORYADMIN_SECRET_KEY must be set when MEMORYADMIN_DEBUG is not true")
    _secret = "dev-only-insecure-key-" + "x" * 40
SECRET_KEY = _secret

ALLOWED_HOSTS = env_list("MEMORYADMIN_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("MEMORYADMIN_CSRF_TRUSTED_ORIGINS", [])
# Where people reach this instance (https://memory.example.com): links in webhook payloads
# are absolute with it, paths without it.
PUBLIC_URL = env_str("MEMORYADMIN_PUBLIC_URL", "").rstrip("/")

DATA_DIR = Path(env_str("MEMORYADMIN_DATA_DIR", str(BASE_DIR / "var")))
DATA_DIR.mkdir(parents=True, exist_ok=True)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "django_filters",
    "memoryadmin",
    "sources",
    "reviews",
    "bundles",
    "webhooks",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "memoryadmin.middleware.ContentSecurityPolicyMiddleware",
    "memoryadmin.middleware.RequestCharactersMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "memoryadmin.middleware.RequestIdMiddleware",
    "memoryadmin.error_views.MethodNotAllowedPageMiddleware",
]

ROOT_URLCONF = "memoryadmin.urls"
WSGI_APPLICATION = "memoryadmin.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "memoryadmin.context_processors.team_navigation",
            ],
        },
    },
]

# Database: SQLite under DATA_DIR unless DATABASE_URL names another.
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{DATA_DIR / 'memoryadmin.sqlite3'}"),
        conn_max_age=env_int("MEMORYADMIN_DB_CONN_MAX_AGE", 0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL + a busy timeout let the web process, the worker and beat share one file.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
_test_db_name = env_str("MEMORYADMIN_TEST_DB_NAME")
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, not :memory:, so a real worker process can open the test database; a bare name
    # is a file under DATA_DIR too (never a stray file in the folder the tests ran from).
    _test_db_file = Path(_test_db_name or "test-memoryadmin.sqlite3")
    if not _test_db_file.is_absolute():
        _test_db_file = DATA_DIR / _test_db_file
    DATABASES["default"]["TEST"] = {"NAME": str(_test_db_file)}
elif _test_db_name:
    DATABASES["default"]["TEST"] = {"NAME": _test_db_name}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# Where `collectstatic` writes and WhiteNoise serves from (the image collects at build time).
STATIC_ROOT = Path(env_str("MEMORYADMIN_STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG

# Rate limits (django-ratelimit syntax, per client address): login posts and failed tokens.
MEMORYADMIN_LOGIN_RATE = env_str("MEMORYADMIN_LOGIN_RATE", "10/m")
MEMORYADMIN_TOKEN_FAILURE_RATE = env_str("MEMORYADMIN_TOKEN_FAILURE_RATE", "30/m")
# Failed sign-ins per username from all addresses, then that username is locked for the window.
MEMORYADMIN_LOGIN_USER_RATE = env_str("MEMORYADMIN_LOGIN_USER_RATE", "30/m")
# Direct peers (IPs/CIDRs) whose X-Forwarded-For is believed; empty: never (the peer is the client).
MEMORYADMIN_TRUSTED_PROXIES = env_networks("MEMORYADMIN_TRUSTED_PROXIES")
RATELIMIT_USE_CACHE = "default"
RATELIMIT_VIEW = "memoryadmin.error_views.too_many_requests"
CSRF_FAILURE_VIEW = "memoryadmin.error_views.csrf_failure"

# E-mail (invitations). SMTP once a host is set; until then the console backend prints the mail
# to the web process's log (the invite link is also shown once on the page to copy).
EMAIL_HOST = env_str("MEMORYADMIN_EMAIL_HOST", "") or ""
EMAIL_PORT = env_int("MEMORYADMIN_EMAIL_PORT", 587, minimum=1)
EMAIL_HOST_USER = env_str("MEMORYADMIN_EMAIL_USER", "") or ""
EMAIL_HOST_PASSWORD = env_str("MEMORYADMIN_EMAIL_PASSWORD", "") or ""
EMAIL_USE_TLS = env_bool("MEMORYADMIN_EMAIL_USE_TLS", True)
EMAIL_TIMEOUT = env_int("MEMORYADMIN_EMAIL_TIMEOUT", 10, minimum=1)
EMAIL_BACKEND = env_str(
    "MEMORYADMIN_EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend",
)
DEFAULT_FROM_EMAIL = env_str("MEMORYADMIN_EMAIL_FROM", "memoryadmin@localhost")
# Days an invitation link stays valid.
MEMORYADMIN_INVITATION_DAYS = env_int("MEMORYADMIN_INVITATION_DAYS", 7, minimum=1)

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Security: production values unless DEBUG.
SECURE_SSL_REDIRECT = env_bool("MEMORYADMIN_SECURE_SSL_REDIRECT", not DEBUG)
SESSION_COOKIE_SECURE = env_bool("MEMORYADMIN_SECURE_COOKIES", not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_HTTPONLY = False  # htmx reads it from the cookie-less form token; kept default
SECURE_HSTS_SECONDS = env_int("MEMORYADMIN_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = env_bool("MEMORYADMIN_HSTS_PRELOAD", False)
# Preload is an opt-in (hard to undo), so its deploy-check warning is silenced while off.
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Sent on every response (memoryadmin.middleware): no inline script or style, no remote loads.
CONTENT_SECURITY_POLICY = env_str(
    "MEMORYADMIN_CONTENT_SECURITY_POLICY",
    "default-src 'self'; img-src 'self' data:; script-src 'self'; style-src 'self';"
    " object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
)
if env_bool("MEMORYADMIN_BEHIND_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]

# Encryption key for stored credentials (Fernet); derived from SECRET_KEY unless given.
CREDENTIALS_KEY = env_str("MEMORYADMIN_CREDENTIALS_KEY")

# Redis, Celery, cache and locks.
REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "memoryadmin",
        }
    }
else:
    # kombu's filesystem transport: a real broker that needs no server (make run).
    _broker_dir = DATA_DIR / "broker"
    for _folder in ("queue", "processed", "control"):
        (_broker_dir / _folder).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(DATA_DIR / "cache"),
        }
    }
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_TASK_DEFAULT_QUEUE = env_str("MEMORYADMIN_CELERY_QUEUE", "memoryadmin")
# One queue per kind of work: <q>.sources, <q>.git, <q>.webhooks, <q>.imports (celery.py).
CELERY_TASK_QUEUES = task_queues(CELERY_TASK_DEFAULT_QUEUE)
CELERY_TASK_ROUTES = ("memoryadmin.celery.task_route",)
CELERY_TASK_ALWAYS_EAGER = env_bool("MEMORYADMIN_CELERY_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = {
    "sources-refresh-due": {
        "task": "sources.tasks.refresh_due_sources",
        "schedule": float(env_int("MEMORYADMIN_SOURCE_REFRESH_BEAT_SECONDS", 60)),
    },
    "reviews-sync-due": {
        "task": "reviews.tasks.sync_due_repositories",
        "schedule": float(env_int("MEMORYADMIN_REPOSITORY_SYNC_BEAT_SECONDS", 300)),
    },
    "webhooks-deliver-due": {"task": "webhooks.tasks.deliver_due", "schedule": 60.0},
    "bundles-sweep-imports": {"task": "bundles.tasks.sweep_import_jobs", "schedule": 60.0},
    # Daily, at a quiet hour (UTC): delete mirror-only chunks withdrawn past their retention.
    "bundles-prune-withdrawn": {
        "task": "bundles.tasks.prune_withdrawn_chunks",
        "schedule": crontab(minute=40, hour=3),
    },
}
# Each worker writes a heartbeat this often (memoryadmin/heartbeat.py); /healthz calls a worker
# dead when its last one is older than the stale mark.
WORKER_HEARTBEAT_SECONDS = env_int("MEMORYADMIN_WORKER_HEARTBEAT_SECONDS", 10, minimum=1)
WORKER_HEARTBEAT_STALE_AFTER = env_int(
    "MEMORYADMIN_WORKER_HEARTBEAT_STALE_AFTER", 3 * WORKER_HEARTBEAT_SECONDS, minimum=1
)
LOCK_DIR = DATA_DIR / "locks"
LOCK_LEASE_SECONDS = env_int("MEMORYADMIN_LOCK_LEASE_SECONDS", 30)  # Redis locks, renewed

# Domain limits and behaviour.
SOURCE_ALLOW_HTTP_LOOPBACK = env_bool("MEMORYADMIN_SOURCE_ALLOW_HTTP_LOOPBACK", False)
SOURCE_ALLOW_PRIVATE_ADDRESSES = env_bool("MEMORYADMIN_SOURCE_ALLOW_PRIVATE_ADDRESSES", DEBUG)
SOURCE_HTTP_TIMEOUT = env_int("MEMORYADMIN_SOURCE_HTTP_TIMEOUT", 10)
WEBHOOK_HTTP_TIMEOUT = env_int("MEMORYADMIN_WEBHOOK_HTTP_TIMEOUT", 5)
SOURCE_MAX_RESPONSE_BYTES = env_int("MEMORYADMIN_SOURCE_MAX_RESPONSE_BYTES", 1_048_576)
SOURCE_MAX_MANIFEST_BYTES = env_int("MEMORYADMIN_SOURCE_MAX_MANIFEST_BYTES", 4_194_304)
SOURCE_MAX_ENTRIES = env_int("MEMORYADMIN_SOURCE_MAX_ENTRIES", 20_000)
# Wall-clock limits of HTTPS source reads: one request with its body, and a whole refresh.
SOURCE_REQUEST_DEADLINE = env_int("MEMORYADMIN_SOURCE_REQUEST_DEADLINE", 30, minimum=1)
SOURCE_REFRESH_DEADLINE = env_int("MEMORYADMIN_SOURCE_REFRESH_DEADLINE", 300, minimum=1)
# Local sources must resolve inside one of these folders (empty: only a superuser adds one).
# Under DEBUG (make run) the default allows DATA_DIR/sources and the demo's folder.
SOURCE_LOCAL_ROOTS = env_list(
    "MEMORYADMIN_SOURCE_LOCAL_ROOTS",
    [str(DATA_DIR / "sources"), str(DATA_DIR / "demo" / "openmemories")] if DEBUG else [],
)
if any(not Path(root).is_absolute() for root in SOURCE_LOCAL_ROOTS):
    raise ConfigError("MEMORYADMIN_SOURCE_LOCAL_ROOTS must list absolute directory paths")
# Whether two teams may read the same local folder (or one inside the other).
SOURCE_LOCAL_SHARED = env_bool("MEMORYADMIN_SOURCE_LOCAL_SHARED", False)
# Whether a refresh may skip reading a local record file whose stat (device, inode, size, mtime,
# ctime) is the one its last read kept; off for a folder on a filesystem whose clock or ctime
# cannot be trusted (docs/sources.md, "Local folders").
SOURCE_TRUST_STAT = env_bool("MEMORYADMIN_SOURCE_TRUST_STAT", True)
# A local source's full read runs in a process forked for it (sources/services/read_process.py),
# beside the refresh's database work instead of sharing its interpreter lock; false: a thread
SOURCE_READ_PROCESS = env_bool("MEMORYADMIN_SOURCE_READ_PROCESS", True)
# Wall-clock limit of one webhook delivery attempt (connect, send, response).
WEBHOOK_DELIVERY_DEADLINE = env_int("MEMORYADMIN_WEBHOOK_DELIVERY_DEADLINE", 15, minimum=1)
# Hours a rotated-out webhook secret still signs deliveries (a second header), 0: none.
WEBHOOK_SECRET_OVERLAP_HOURS = env_int("MEMORYADMIN_WEBHOOK_SECRET_OVERLAP_HOURS", 24, minimum=0)
BUNDLE_MAX_BYTES = env_int("MEMORYADMIN_BUNDLE_MAX_BYTES", 512 * 1024 * 1024)
BUNDLE_SYNC_IMPORT_MAX_BYTES = env_int("MEMORYADMIN_BUNDLE_SYNC_IMPORT_MAX_BYTES", 32 * 1024 * 1024)
BUNDLE_IMPORT_LEASE_SECONDS = env_int("MEMORYADMIN_BUNDLE_IMPORT_LEASE_SECONDS", 600)
# A chunk only a mirror created, withdrawn (no active origin) for this many days, is deleted.
BRAIN_WITHDRAWN_RETENTION_DAYS = env_int(
    "MEMORYADMIN_BRAIN_WITHDRAWN_RETENTION_DAYS", 30, minimum=0
)
# Semantic recall (issue #16): on when the `semantic` extra is installed, unless switched off.
SEMANTIC_ENABLED = env_bool("MEMORYADMIN_SEMANTIC_ENABLED", True)
SEMANTIC_EMBED_BATCH = env_int("MEMORYADMIN_SEMANTIC_EMBED_BATCH", 256, minimum=1)
# Web processes: torch threads per query encoding (0: torch's default) and query vectors kept
# per process (0: no cache); bundles/embeddings/model.py.
SEMANTIC_WEB_THREADS = env_int("MEMORYADMIN_SEMANTIC_WEB_THREADS", 1, minimum=0)
SEMANTIC_QUERY_CACHE = env_int("MEMORYADMIN_SEMANTIC_QUERY_CACHE", 1024, minimum=0)
# Reviewer hints: cosine similarity (x100) from which a memory is a "possible duplicate", and
# from which it is shown as "related" at all.
SEMANTIC_DUPLICATE_PERCENT = env_int("MEMORYADMIN_SEMANTIC_DUPLICATE_PERCENT", 85, minimum=1)
SEMANTIC_RELATED_PERCENT = env_int("MEMORYADMIN_SEMANTIC_RELATED_PERCENT", 45, minimum=1)
REPOSITORY_ALLOW_LOCAL_REMOTES = env_bool("MEMORYADMIN_REPOSITORY_ALLOW_LOCAL_REMOTES", DEBUG)
GIT_TIMEOUT = env_int("MEMORYADMIN_GIT_TIMEOUT", 120, minimum=1)  # seconds per fetch or push
REVIEW_BOT_IDENTITY = env_str("MEMORYADMIN_REVIEW_BOT_IDENTITY", "memoryadmin <bot@localhost>")
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MEMORYADMIN_UPLOAD_MAX_MEMORY_BYTES", 8 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
FILE_UPLOAD_HANDLERS = [
    "memoryadmin.uploads.SizeLimitUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
FILE_UPLOAD_TEMP_DIR = None

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "memoryadmin.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "memoryadmin.api_errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
# django-filter: the empty choice of a list's filter bar.
FILTERS_EMPTY_CHOICE_LABEL = "Any"
SPECTACULAR_SETTINGS = {
    "TITLE": "memoryadmin API",
    "DESCRIPTION": "Sources, reviews and MemoryAI bundles for a team's agent memory.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # One area tag per operation and the introduction from the scope registry.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "memoryadmin.api_docs.areas_and_introduction",
    ],
    # Never a CDN; the docs template loads our patched copy of Redoc (memoryadmin/redoc.py).
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "SourceKindEnum": "sources.models.SourceKind",
        "SourceStateEnum": "sources.models.SourceState",
        "CredentialKindEnum": "sources.models.CredentialKind",
        "DecisionKindEnum": "reviews.models.DecisionKind",
        "PushStateEnum": "reviews.models.PushState",
        "RefreshRunStatusEnum": "sources.models.RunStatus",
        "MemoryStatusEnum": "reviews.models.MemoryStatus",
        "TokenKindEnum": "memoryadmin.models.TokenKind",
        "ReaderKindEnum": ["token", "user"],  # who read, on the usage counters
        "RoleEnum": "memoryadmin.models.Role",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("MEMORYADMIN_LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # The MCP SDK logs each stateless request's transport start and stop at INFO.
        "mcp.server.streamable_http": {"level": "WARNING"},
        "mcp.server.streamable_http_manager": {"level": "WARNING"},
    },
}

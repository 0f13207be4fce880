"""Which environment variables may serve as secrets that fimone sends to another server.

A model configuration (and an MCP server's headers or environment) names the environment
variable that holds its key, never the key itself. Whoever may edit such a row would
otherwise pick any variable of the server process (``SECRET_KEY``, ``DATABASE_URL``) and send
it to a host of their choice. So a name must match one of the operator's patterns,
``FIMONE_SECRET_ENV_ALLOWLIST`` (comma-separated shell-style patterns, default
``*_API_KEY``), and the variables that guard fimone itself are refused whatever the patterns
say. docs/operations.md ("Secrets and the key allow-list") is the operator's side of this.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from django.conf import settings
from django.utils.translation import gettext

DEFAULT_PATTERNS = ("*_API_KEY",)

# fimone's own secrets; and the environment's model keys, which go only to their own base
# URLs (a row leaves the key variable blank to use them there). Compared case-insensitively.
OWN_SECRETS = frozenset({"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "EMAIL_URL"})
ENV_MODEL_KEYS = frozenset({"LLM_API_KEY", "FAST_LLM_API_KEY"})
NEVER_ALLOWED = OWN_SECRETS | ENV_MODEL_KEYS


def allowed_patterns() -> tuple[str, ...]:
    """The operator's patterns (the setting may be a list or one comma-separated string)."""
    raw = getattr(settings, "FIMONE_SECRET_ENV_ALLOWLIST", DEFAULT_PATTERNS)
    if isinstance(raw, str):
        raw = raw.split(",")
    return tuple(p.strip() for p in raw if p and p.strip())


def secret_env_allowed(name: str) -> bool:
    """Whether the environment variable ``name`` may be read as a secret and sent out."""
    name = (name or "").strip()
    if not name or name.upper() in NEVER_ALLOWED:
        return False
    return any(fnmatchcase(name, pattern) for pattern in allowed_patterns())


def secret_env_refusal(name: str) -> str:
    """Why ``name`` may not serve as a secret, for a form or a log; "" when it may."""
    if secret_env_allowed(name):
        return ""
    if (name or "").strip().upper() in ENV_MODEL_KEYS:
        return gettext(
            "%(name)s goes only to the endpoint configured beside it in the environment; leave "
            "the key variable blank to use it there."
        ) % {"name": name}
    if (name or "").strip().upper() in OWN_SECRETS:
        return gettext(
            "%(name)s guards fimone itself and is never sent to another server; name a "
            "variable that holds only this key."
        ) % {"name": name}
    return gettext(
        "%(name)s is not on the server's list of variables that may hold keys "
        "(FIMONE_SECRET_ENV_ALLOWLIST: %(patterns)s); use a name that matches it, or ask "
        "the operator to add it."
    ) % {"name": name, "patterns": ", ".join(allowed_patterns()) or "-"}

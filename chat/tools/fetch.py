"""The ``fetch_url`` tool as the settings configure it (docs/tools.md, "Web pages").

``fetch_config()`` is read when a run builds its tools; the allow-list is also parsed once
at start-up (``ChatConfig.ready``) so that a bad entry stops the server with a message
naming it instead of failing every run.
"""

from __future__ import annotations

import dataclasses
import functools

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from chat.documents.extraction import extraction_pool
from fimone.agent.tools.netpolicy import AddressPolicy
from fimone.agent.tools.web import FetchConfig
from fimone.agent.tools.web_fetch import FetchLimits

# Connecting and waiting for the first byte get a share of the whole deadline.
_CONNECT_SECONDS = 5.0
_READ_SECONDS = 10.0


def fetch_config() -> FetchConfig | None:
    """The tool's configuration, or None when the operator switched it off."""
    if not settings.FIMONE_FETCH_ENABLED:
        return None
    config = _config(
        tuple(settings.FIMONE_FETCH_ALLOWED_HOSTS),
        settings.FIMONE_FETCH_MAX_BYTES,
        settings.FIMONE_FETCH_TIMEOUT_SECONDS,
        settings.FIMONE_FETCH_MAX_CHARS,
    )
    # Pages are read by the same worker processes as uploaded documents.
    return dataclasses.replace(config, pool=extraction_pool())


def address_policy() -> AddressPolicy:
    """The addresses ``fetch_url`` may connect to; a tool server added in the admin obeys
    the same policy (docs/tools.md, "MCP servers")."""
    return _policy(tuple(settings.FIMONE_FETCH_ALLOWED_HOSTS))


def check_settings() -> None:
    """Raise ``ImproperlyConfigured`` for settings the tool cannot work with."""
    fetch_config()


@functools.lru_cache(maxsize=4)
def _policy(allowed: tuple[str, ...]) -> AddressPolicy:
    try:
        return AddressPolicy.from_entries(allowed)
    except ValueError as exc:
        raise ImproperlyConfigured(f"FIMONE_FETCH_ALLOWED_HOSTS: {exc}") from None


@functools.lru_cache(maxsize=4)
def _config(
    allowed: tuple[str, ...], max_bytes: int, total_seconds: float, max_chars: int
) -> FetchConfig:
    policy = _policy(allowed)
    for name, value in (
        ("FIMONE_FETCH_MAX_BYTES", max_bytes),
        ("FIMONE_FETCH_TIMEOUT_SECONDS", total_seconds),
        ("FIMONE_FETCH_MAX_CHARS", max_chars),
    ):
        if value <= 0:
            raise ImproperlyConfigured(f"{name} must be more than 0, not {value}")
    limits = FetchLimits(
        max_bytes=max_bytes,
        total_seconds=total_seconds,
        connect_seconds=min(_CONNECT_SECONDS, total_seconds),
        read_seconds=min(_READ_SECONDS, total_seconds),
    )
    return FetchConfig(policy=policy, limits=limits, max_chars=max_chars)

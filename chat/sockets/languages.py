"""The interface language of a websocket: the same choice LocaleMiddleware makes for a page.

A socket's frames (error messages, the runs it starts and what their offline model writes)
are in the language the user's pages are in: the language switch's cookie, else the
browser's Accept-Language, else the default. Channels' cookie middleware has parsed the
cookies into the scope already.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest
from django.utils import translation


def language_from_scope(scope: Mapping[str, Any]) -> str:
    """The language code (one of ``settings.LANGUAGES``) for a websocket's scope."""
    request = HttpRequest()
    request.COOKIES = dict(scope.get("cookies") or {})
    for name, value in scope.get("headers") or []:
        if name == b"accept-language":
            request.META["HTTP_ACCEPT_LANGUAGE"] = value.decode("latin-1")
    return translation.get_language_from_request(request)

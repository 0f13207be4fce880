"""Every HTTP and websocket route of the project, enumerated from the URLconfs.

The security tests walk these lists rather than a hand-written one, so a route added later
is tested the moment it exists: it either refuses anonymous and cross-user access, or it is
named in a test's public allowlist with a reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.urls.resolvers import RegexPattern

_CONVERTER = re.compile(r"<(?:(\w+):)?(\w+)>")
_REGEX_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)")
# Sample values for regex groups the admin uses (app_list and its catch-all).
_REGEX_SAMPLES = {"app_label": "chat", "url": "no-such-admin-page/"}


@dataclass(frozen=True)
class Route:
    template: str  # e.g. "api/conversations/<str:conversation_id>/"
    name: str | None  # "namespace:name" or None
    params: tuple[str, ...]
    callback: object

    def url(self, values: dict[str, str]) -> str:
        """A concrete path for this route, with ``values`` (default "1") for parameters."""
        path = _REGEX_GROUP.sub(
            lambda m: values.get(m.group(1), _REGEX_SAMPLES.get(m.group(1), "1")), self.template
        )
        path = _CONVERTER.sub(lambda m: str(values.get(m.group(2), "1")), path)
        path = "/" + path.replace("^", "").replace("$", "")
        # The path must reach this very route, or the test would test something else.
        match = resolve(path)
        assert match.func == self.callback, (path, self.template)
        return path


def _walk(patterns, prefix: str = "", namespace: str | None = None) -> Iterator[Route]:
    for pattern in patterns:
        text = str(pattern.pattern)
        if isinstance(pattern.pattern, RegexPattern):
            text = text.lstrip("^")
        if isinstance(pattern, URLResolver):
            yield from _walk(pattern.url_patterns, prefix + text, pattern.namespace or namespace)
        elif isinstance(pattern, URLPattern):
            template = prefix + text
            groups = tuple(_REGEX_GROUP.findall(template))
            plain = _REGEX_GROUP.sub("", template)
            params = tuple(m.group(2) for m in _CONVERTER.finditer(plain)) + groups
            name = pattern.name and (f"{namespace}:{pattern.name}" if namespace else pattern.name)
            yield Route(template, name, params, pattern.callback)


def http_routes() -> list[Route]:
    return list(_walk(get_resolver().url_patterns))


def websocket_routes() -> list[str]:
    """Route templates of the websocket URLRouter (chat.sockets.routing)."""
    from chat.sockets.routing import websocket_urlpatterns

    return [str(p.pattern) for p in websocket_urlpatterns]


def websocket_path(template: str, values: dict[str, str]) -> str:
    return "/" + _CONVERTER.sub(lambda m: str(values.get(m.group(2), "1")), template)

"""Content-Security-Policy through django-csp.

The policy itself lives in settings (``CONTENT_SECURITY_POLICY``). The one part settings
cannot say is the websocket origin: ``'self'`` does not cover ``ws:``/``wss:`` in every
browser, so the socket's origin is added from the host the page was served from.
"""

from __future__ import annotations

from csp.middleware import CSPMiddleware, PolicyParts
from django.http import HttpRequest, HttpResponseBase


class SocketAwareCSPMiddleware(CSPMiddleware):
    def get_policy_parts(
        self,
        request: HttpRequest,
        response: HttpResponseBase,
        report_only: bool = False,
    ) -> PolicyParts:
        parts = super().get_policy_parts(request, response, report_only)
        if report_only:
            return parts
        host = request.get_host()
        socket_origins = [f"ws://{host}", f"wss://{host}"]
        update = dict(parts.update or {})
        update["connect-src"] = [*update.get("connect-src", []), *socket_origins]
        parts.update = update
        return parts

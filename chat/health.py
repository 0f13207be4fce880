"""``/healthz`` for load balancers: does this process, its database and its channel layer
answer? JSON, no login, no secrets: each check is "ok", "draining" or "unavailable"."""

from __future__ import annotations

import asyncio
import logging

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import connection
from django.http import HttpRequest, JsonResponse

from chat import drain

logger = logging.getLogger(__name__)

CHECK_TIMEOUT_SECONDS = 3.0


async def healthz(request: HttpRequest) -> JsonResponse:
    if request.method not in ("GET", "HEAD"):
        response = JsonResponse(
            {"error": {"code": "method_not_allowed", "message": "Use GET."}}, status=405
        )
        response["Allow"] = "GET, HEAD"
        return response
    checks = {
        "process": "draining" if drain.is_draining() else "ok",
        "database": await _check("database", sync_to_async(_database_answers)()),
        # No outer timeout here: it has its own deadline (see _channel_layer_answers).
        "channel_layer": await _check("channel layer", _channel_layer_answers(), limit=None),
    }
    healthy = all(value == "ok" for value in checks.values())
    response = JsonResponse(
        {"status": "ok" if healthy else "unavailable", "checks": checks},
        status=200 if healthy else 503,
    )
    response["Cache-Control"] = "no-store"
    return response


async def _check(name: str, probe, *, limit: float | None = CHECK_TIMEOUT_SECONDS) -> str:
    try:
        await asyncio.wait_for(probe, limit)
    except Exception:
        # Logged here with the reason; the answer stays free of connection details.
        logger.warning("health check: the %s does not answer", name, exc_info=True)
        return "unavailable"
    return "ok"


def _database_answers() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


async def _channel_layer_answers() -> None:
    """A message sent to a fresh channel of this process and received back."""
    layer = get_channel_layer()
    if layer is None:
        raise RuntimeError("no channel layer configured")
    channel = await asyncio.wait_for(layer.new_channel(), CHECK_TIMEOUT_SECONDS)
    await asyncio.wait_for(layer.send(channel, {"type": "health.ping"}), CHECK_TIMEOUT_SECONDS)
    # A channels-redis receive() must never be cancelled (a cancelled one can lose a message
    # meant for another socket of this process): the deadline is a message to ourselves.
    loop = asyncio.get_running_loop()
    timer = loop.call_later(
        CHECK_TIMEOUT_SECONDS,
        lambda: asyncio.ensure_future(layer.send(channel, {"type": "health.timeout"})),
    )
    try:
        message = await layer.receive(channel)
    finally:
        timer.cancel()
    if message.get("type") != "health.ping":
        raise RuntimeError("the channel layer returned another message")

"""The event-loop lag monitor sees a stall, logs it at debug level and reports it."""

import asyncio
import gc
import json
import logging
import time

import pytest

from config.loop_monitor import LoopLagMonitor, MonitoredApp, monitor_from_settings


async def test_a_blocking_call_on_the_loop_is_measured_and_logged(caplog, tmp_path):
    report = tmp_path / "lag.json"
    monitor = LoopLagMonitor(interval=0.005, threshold=0.03, report_path=report).start()
    await asyncio.sleep(0.02)
    with caplog.at_level(logging.DEBUG, logger="fimone.loop"):
        time.sleep(0.08)  # noqa: ASYNC251 — the stall under test
        await asyncio.sleep(0.02)
    await monitor.stop()
    assert monitor.max_stall >= 0.05
    assert monitor.stalls >= 1
    assert any("event loop stalled" in r.getMessage() for r in caplog.records)
    figures = json.loads(report.read_text())
    assert figures["max_stall_ms"] >= 50 and figures["samples"] == monitor.samples


async def test_a_stall_that_computes_is_told_from_one_that_waits(tmp_path):
    report = tmp_path / "lag.json"
    monitor = LoopLagMonitor(interval=0.005, threshold=0.03, report_path=report).start()
    await asyncio.sleep(0.02)
    time.sleep(0.08)  # noqa: ASYNC251 — the loop's thread waits (as when descheduled)
    await asyncio.sleep(0.02)
    waited = monitor.max_busy
    end = time.thread_time() + 0.08
    while time.thread_time() < end:  # the loop's thread computes
        pass
    await asyncio.sleep(0.02)
    await monitor.stop()
    assert waited < 0.03 <= 0.06 <= monitor.max_busy
    figures = json.loads(report.read_text())
    stalls = figures["recent_stalls"]
    assert len(stalls) == monitor.stalls >= 2
    assert all(abs(at - time.time()) < 60 and ms >= 30 for at, ms, _, _ in stalls)
    assert figures["max_busy_stall_ms"] >= 60


async def test_full_garbage_collections_are_reported_with_what_they_freed(tmp_path):
    report = tmp_path / "lag.json"
    monitor = LoopLagMonitor(interval=0.005, threshold=0.5, report_path=report).start()

    class Node:
        pass

    for _ in range(100):  # a hundred cycles only a collection frees
        a, b = Node(), Node()
        a.other, b.other = b, a
    del a, b
    gc.collect()  # generation 2: a full collection
    gc.collect(0)  # a young one is not reported
    await monitor.stop()
    collections = json.loads(report.read_text())["full_collections"]
    assert collections
    assert all(abs(at - time.time()) < 60 and ms >= cpu >= 0 for at, ms, cpu, _ in collections)
    assert max(freed for *_, freed in collections) >= 200
    count = len(monitor.collections)
    gc.collect()  # after stop: no longer recorded
    assert len(monitor.collections) == count


async def test_a_free_loop_logs_nothing(caplog):
    monitor = LoopLagMonitor(interval=0.005, threshold=0.5).start()
    with caplog.at_level(logging.DEBUG, logger="fimone.loop"):
        await asyncio.sleep(0.05)
    await monitor.stop()
    assert monitor.samples > 0 and monitor.stalls == 0
    assert not [r for r in caplog.records if r.name == "fimone.loop"]


def test_reset_forgets_the_figures():
    monitor = LoopLagMonitor()
    monitor.record(0.2, 0.1)
    monitor.reset()
    assert (monitor.max_stall, monitor.max_busy, monitor.stalls, monitor.samples) == (0, 0, 0, 0)
    assert not monitor.recent


def test_settings_switch_it_off(settings):
    settings.FIMONE_LOOP_MONITOR_INTERVAL_MS = 0
    assert monitor_from_settings() is None


async def test_the_asgi_wrapper_starts_one_monitor_per_serving_loop(settings):
    settings.FIMONE_LOOP_MONITOR_INTERVAL_MS = 20
    seen = []

    async def app(scope, receive, send):
        seen.append(scope["type"])

    wrapped = MonitoredApp(app)
    await wrapped({"type": "http"}, None, None)
    first = wrapped.monitor
    await wrapped({"type": "websocket"}, None, None)
    assert seen == ["http", "websocket"]
    assert first is wrapped.monitor and first.running and first.interval == pytest.approx(0.02)
    await first.stop()

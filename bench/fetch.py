"""What ``fetch_url`` costs the server: time per fetch and the event loop's lag meanwhile.

    .venv/bin/python bench/fetch.py [--fetches 30]

A page server on loopback (tests/support/web_server.py in a process of its own, so that
its work is not counted; allowed as an operator would) serves an article, a page of 9,000
paragraphs (near the limit where the main-text search still runs), one of 40,000 (past
it: plain text) and a 50 MB body (cut at the 5 MiB cap; 2 MiB of it searched).
For each, ``--fetches`` calls of the tool in this process, one at a time, report wall time
p50/p95 (the server's own time is a few ms of that); a ticker on the same event loop wakes
every 2 ms and reports its largest lag during those calls, which is what every socket of a
daphne process would feel while one of its runs fetches. Each case runs twice: the page
read in a thread of this process (the lag is the GIL its C calls hold, not code on the
loop), and read in an extraction worker process as the server does (``FetchConfig.pool``,
the workers of uploaded documents).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fimone.agent.tools import ToolRegistry  # noqa: E402
from fimone.agent.tools.netpolicy import AddressPolicy  # noqa: E402
from fimone.agent.tools.web import FetchConfig, fetch_url_tool  # noqa: E402
from fimone.extract.isolated import ExtractionPool  # noqa: E402

TICK = 0.002


async def ticker(lags: list[float], stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        before = loop.time()
        await asyncio.sleep(TICK)
        lags.append(loop.time() - before - TICK)


async def measure(tools: ToolRegistry, url: str, fetches: int) -> tuple[list[float], float, str]:
    lags: list[float] = []
    stop = asyncio.Event()
    tick = asyncio.create_task(ticker(lags, stop))
    times = []
    result = ""
    for _ in range(fetches):
        started = time.perf_counter()
        result = await tools.run("fetch_url", json.dumps({"url": url}))
        times.append(time.perf_counter() - started)
    stop.set()
    await tick
    return times, max(lags, default=0.0), result


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run(base: str, fetches: int) -> None:
    pool = ExtractionPool(workers=2)
    try:
        for where, chosen in (("in a thread", None), ("in a worker process", pool)):
            print(f"-- the page read {where}")
            await run_cases(base, fetches, chosen)
    finally:
        pool.close()


async def run_cases(base: str, fetches: int, pool: ExtractionPool | None) -> None:
    policy = AddressPolicy.from_entries(["127.0.0.1"])
    tools = ToolRegistry([fetch_url_tool(FetchConfig(policy=policy, pool=pool))])
    await tools.run("fetch_url", json.dumps({"url": base + "/article"}))  # warm imports
    cases = [
        ("article (3 kB)", "/article", fetches),
        ("9,000 paragraphs (0.6 MB)", "/many?n=9000", max(3, fetches // 5)),
        ("40,000 paragraphs (3.4 MB)", "/many?n=40000", max(3, fetches // 5)),
        ("50 MB body, cut at 5 MiB", "/big?mb=50", max(3, fetches // 5)),
    ]
    print(f"fetch_url on loopback, {fetches} fetches of the article, fewer of the others")
    for label, path, count in cases:
        times, lag, result = await measure(tools, base + path, count)
        assert not result.startswith("Error"), result[:200]
        print(
            f"{label}: fetch (ms) p50={statistics.median(times) * 1000:.1f} "
            f"p95={pct(times, 0.95) * 1000:.1f}; loop lag max (ms)={lag * 1000:.1f}"
        )


def main(fetches: int) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.support.web_server"],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        asyncio.run(run(f"http://127.0.0.1:{int(server.stdout.readline())}", fetches))
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fetches", type=int, default=30)
    main(parser.parse_args().fetches)

"""Tools: fimone's own overhead per MCP call, over stdio and streamable HTTP.

Starts the test MCP server (tests/support/mcp_server.py, the SDK's own server) as a stdio
child and over streamable HTTP on loopback, and calls its ``echo`` tool through fimone's
whole path (``ToolRegistry.run_output``: argument check, the pool's connection, the SDK's
``ClientSession.call_tool``, the result as the model reads it). Each call's time inside the
SDK's ``call_tool`` (transport, server, JSON-RPC) is measured too; fimone's overhead is the
call's time less that. Prints p50/p95 of the overhead (target: p95 ≤ 5 ms) and, for
reference, of the whole round trip.

    .venv/bin/python bench/tools.py [--calls 500] [--pdf-pages 300]

Then the documents part (bench/documents.py): upload-to-ready time of a 300-page PDF
(``--pdf-pages 0`` leaves it out).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fimone.agent.tools import ToolRegistry  # noqa: E402
from fimone.agent.tools.mcp_client import McpPool  # noqa: E402
from fimone.agent.tools.mcp_config import McpServerSpec, SecretRefused  # noqa: E402
from tests.support.mcp_servers import http_server, stdio_spec  # noqa: E402

TARGET_P95_MS = 5.0


def refuse(name: str) -> str:
    raise SecretRefused(name)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(spec: McpServerSpec, calls: int) -> tuple[list[float], list[float]]:
    """Per call: (whole call through fimone, time inside the SDK's call_tool), in ms."""
    pool = McpPool(refuse, start_timeout=60.0)
    try:
        toolset = await pool.toolset([spec], vision=False)
        assert not toolset.problems, toolset.problems
        tools = ToolRegistry(toolset.tools)
        session = await (await pool.connection(spec)).session()
        inner: list[float] = []
        sdk_call = session.call_tool

        async def timed_call(*args, **kwargs):
            start = time.perf_counter()
            try:
                return await sdk_call(*args, **kwargs)
            finally:
                inner.append((time.perf_counter() - start) * 1000)

        session.call_tool = timed_call  # type: ignore[method-assign]
        name = f"{spec.name}__echo"
        for _ in range(30):  # warm-up: imports, first schema check, connection pools
            await tools.run_output(name, '{"text": "warm"}')
        inner.clear()
        whole: list[float] = []
        for i in range(calls):
            start = time.perf_counter()
            output = await tools.run_output(name, f'{{"text": "call {i}"}}')
            whole.append((time.perf_counter() - start) * 1000)
            assert output.text == f"echo: call {i}", output.text
        return whole, inner
    finally:
        await pool.aclose()


def report(label: str, whole: list[float], inner: list[float]) -> float:
    overhead = [w - s for w, s in zip(whole, inner, strict=True)]
    p95 = percentile(overhead, 0.95)
    print(
        f"{label:6} fimone overhead per call: p50 {statistics.median(overhead):.3f} ms, "
        f"p95 {p95:.3f} ms  (whole round trip: p50 {statistics.median(whole):.2f} ms, "
        f"p95 {percentile(whole, 0.95):.2f} ms; {len(whole)} calls)"
    )
    return p95


async def main(calls: int) -> int:
    markers = Path(tempfile.mkdtemp(prefix="fimone-bench-tools-"))
    worst = report("stdio", *await measure(stdio_spec(markers, name="bench"), calls))
    with http_server(markers) as url:
        spec = McpServerSpec(name="bench", transport="http", url=url)
        worst = max(worst, report("http", *await measure(spec, calls)))
    verdict = "met" if worst <= TARGET_P95_MS else "NOT met"
    print(f"target p95 <= {TARGET_P95_MS:g} ms: {verdict}")
    return 0 if worst <= TARGET_P95_MS else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument(
        "--pdf-pages", type=int, default=300, help="the documents part (bench/documents.py)"
    )
    args = parser.parse_args()
    code = asyncio.run(main(args.calls))
    if args.pdf_pages:
        # Documents: upload-to-ready time of a long PDF (bench/documents.py).
        from bench import documents

        print()
        code = documents.main(args.pdf_pages, uploads=3) or code
    sys.exit(code)

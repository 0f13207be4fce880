"""Tool definitions as a tier: the tokens a request spends on them, at 8K, 32K and 128K.

Starts the test MCP server (tests/support/mcp_server.py, the SDK's own server) as a stdio
child listing ``--tools`` tools (300 by default, named and described like a real service's),
lists them through fimone's pool, and adds them to the built-in tools a run has. For each
window it prints, in fimone's estimated tokens:

- all definitions: what every request sent before the tool tier (and what the history lost);
- the share (a quarter of the usable input budget), the tier the run keeps (what the
  first call sends and room for the finder's finds) and what the first call sends (the
  built-ins, ``find_tools``), then after ``find_tools`` answered once;
- the history's room with all definitions sent, and with the tier;
- the CPU time of building a run's offer (``ToolOffer``) and of the gauge's tier sum.

    .venv/bin/python bench/tool_tier.py [--tools 300] [--repeat 20]
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

from contextmgmt.core.budget import usable_input_tokens  # noqa: E402
from contextmgmt.core.messages import ChatMessage  # noqa: E402
from contextmgmt.core.tiers import tool_definitions_cap  # noqa: E402
from contextmgmt.core.tokens import estimate_message_tokens  # noqa: E402
from fimone.agent.prompts import REACT_SYSTEM  # noqa: E402
from fimone.agent.tools import default_tools  # noqa: E402
from fimone.agent.tools.finder import FINDER_NAME, ToolOffer, definition_tokens  # noqa: E402
from fimone.agent.tools.mcp_client import McpPool  # noqa: E402
from fimone.agent.tools.mcp_config import SecretRefused  # noqa: E402
from fimone.agent.tools.web import fetch_url_tool  # noqa: E402
from tests.support.mcp_servers import SERVER_MODULE, stdio_spec  # noqa: E402

# (window, output tokens): usable input = window − output − the 4,000 reserve (floor 4,000).
WINDOWS = ((8_192, 1_024), (32_768, 4_096), (131_072, 8_192))


def refuse(name: str) -> str:
    raise SecretRefused(name)


async def no_search(query: str, limit: int) -> list:
    return []


async def server_tools(count: int) -> list:
    # Past the per-server cap (FIMONE_MCP_MAX_TOOLS): the tier, not the cap, is measured.
    pool = McpPool(refuse, start_timeout=120.0, max_tools=count + 100)
    spec = stdio_spec(
        Path(tempfile.mkdtemp()),
        name="many",
        args=("-m", SERVER_MODULE, "stdio", "--service-tools", str(count)),
        timeout=120.0,
    )
    try:
        listed = await pool.toolset([spec], vision=False)
    finally:
        await pool.aclose()
    if listed.problems:
        raise SystemExit(f"the MCP server failed: {listed.problems}")
    return listed.tools


def registry(extra: list):
    tools = default_tools(no_search)
    tools.register(fetch_url_tool())
    for tool in extra:
        tools.register(tool)
    return tools


def median_us(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times) * 1e6


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    served = await server_tools(args.tools)
    tools = registry(served)
    system = estimate_message_tokens(ChatMessage(role="system", content=REACT_SYSTEM))
    everything = definition_tokens(tools.openai_tools())
    print(
        f"{len(served)} server tools + {len(tools) - len(served)} built-in: "
        f"all definitions {everything:,} tokens; system prompt {system:,}"
    )
    header = (
        "window", "budget", "all defs", "% budget", "share", "tier", "1st call", "% budget",
        "after a find", "sent", "history before", "history now",
    )  # fmt: skip
    print(" | ".join(header))
    for window, output in WINDOWS:
        budget = usable_input_tokens(window, output)
        offer = ToolOffer(tools, budget)
        first = offer.tokens()
        await offer.registry.run(FINDER_NAME, '{"query": "archive a support ticket"}')
        after = offer.tokens()
        before_room = max(0, budget - system - everything)
        room = max(0, budget - system - offer.split.tools)
        print(
            " | ".join(
                [
                    f"{window // 1024}K",
                    f"{budget:,}",
                    f"{everything:,}",
                    f"{100 * everything / budget:.0f} %",
                    f"{tool_definitions_cap(budget):,}",
                    f"{offer.split.tools:,}",
                    f"{first:,}",
                    f"{100 * first / budget:.1f} %",
                    f"{after:,}",
                    f"{len(offer.names())} tools",
                    f"{before_room:,}",
                    f"{room:,}",
                ]
            )
        )
    budget = usable_input_tokens(32_768, 4_096)
    build = median_us(lambda: ToolOffer(tools, budget), args.repeat)
    print(f"CPU per run to build the offer at 32K ({len(tools)} tools): {build / 1000:.2f} ms")


if __name__ == "__main__":
    asyncio.run(main())

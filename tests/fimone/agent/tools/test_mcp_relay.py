"""The relay between fimone and a stdio tool server (fimone/agent/tools/mcp_relay.py): a
tool result too large to read is cut there (RO.9), a listing to one more tool than is
offered (RO.12), everything else passes unchanged."""

from __future__ import annotations

import json
import subprocess
import sys

from fimone.agent.tools.mcp_client import RELAY
from fimone.agent.tools.mcp_relay import cap_listing, cut_result


def message(result: dict) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 7, "result": result}).encode()


def test_a_large_text_result_is_cut_with_a_sentence_and_its_wrapped_copy_alike():
    text = "x" * 1_000
    cut = json.loads(
        cut_result(
            message(
                {"content": [{"type": "text", "text": text}], "structuredContent": {"result": text}}
            ),
            10,
        )
    )
    assert cut["id"] == 7
    first, note = cut["result"]["content"]
    assert first == {"type": "text", "text": "x" * 10}
    assert "1,000 characters of text" in note["text"] and "first 10" in note["text"]
    assert cut["result"]["structuredContent"] == {"result": "x" * 10}
    assert cut["result"]["isError"] is False


def test_other_structured_content_is_dropped_and_the_result_says_why():
    cut = json.loads(
        cut_result(
            message(
                {
                    "content": [{"type": "text", "text": "y" * 50}],
                    "structuredContent": {"rows": [1, 2]},
                }
            ),
            10,
        )
    )
    assert "structuredContent" not in cut["result"] and cut["result"]["isError"] is True
    assert cut["result"]["content"][0]["text"] == "Its structured content was too large."


def test_what_is_not_a_tool_result_passes_unchanged():
    listing = message({"tools": [{"name": "a"}]})
    assert cut_result(listing, 10) == listing
    assert cut_result(b"not json\n", 10) == b"not json\n"


# -- tool listings ---------------------------------------------------------------------------


def listing(count: int, next_cursor: str | None = None) -> bytes:
    result: dict = {"tools": [{"name": f"tool_{i}", "inputSchema": {}} for i in range(count)]}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return message(result)


def names(line: bytes) -> list[str]:
    return [tool["name"] for tool in json.loads(line)["result"]["tools"]]


def test_a_single_page_longer_than_the_cap_keeps_one_tool_more_than_is_offered():
    """RO.12: 10,000 tools, 50 offered: 51 reach the client, which then knows (and says)
    that the server listed more."""
    capped = cap_listing(listing(10_000), 50, None)
    assert names(capped) == [f"tool_{i}" for i in range(51)]
    assert json.loads(capped)["id"] == 7
    assert len(capped) < len(listing(10_000)) / 100


def test_a_page_reaching_the_cap_drops_its_next_cursor_and_a_shorter_one_keeps_it():
    """RO.12: once a page holds more than are offered no further page is asked for; a page
    within the cap passes unchanged, byte for byte, next cursor and all."""
    capped = json.loads(cap_listing(listing(60, next_cursor="60"), 50, None))
    assert len(capped["result"]["tools"]) == 51 and "nextCursor" not in capped["result"]
    within = listing(20, next_cursor="20")
    assert cap_listing(within, 50, None) == within


def test_a_page_keeps_only_the_allowed_tools_and_its_next_cursor():
    """Allowed tools on a later page are still found: the page shrinks to what is allowed,
    the next cursor stays while the cap is not reached."""
    capped = json.loads(cap_listing(listing(1_000, next_cursor="1000"), 50, {"tool_3", "x"}))
    assert capped["result"] == {
        "tools": [{"name": "tool_3", "inputSchema": {}}],
        "nextCursor": "1000",
    }


def test_the_relay_process_passes_the_capped_listing_on():
    """The relay as fimone starts it (RO.12): a server printing 10,000 tools on one line,
    51 reach the client."""
    server = (
        "import json, sys; "
        "tools = [{'name': f'tool_{i}', 'inputSchema': {}} for i in range(10_000)]; "
        "print(json.dumps({'jsonrpc': '2.0', 'id': 7, 'result': {'tools': tools}}))"
    )
    done = subprocess.run(
        [sys.executable, RELAY, "1000000", "100", "50", "null", "--", sys.executable, "-c", server],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert len(names(done.stdout)) == 51

"""The relay between fimone and a stdio tool server (fimone/agent/tools/mcp_relay.py): a
tool result too large to read is cut there, everything else passes unchanged (RO.9)."""

from __future__ import annotations

import json

from fimone.agent.tools.mcp_relay import cut_result


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

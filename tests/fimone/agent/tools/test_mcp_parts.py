"""The MCP client's plain parts: the mcpServers format, names, results, argument checks of
arbitrary JSON schemas."""

from __future__ import annotations

import json

import mcp_types as types
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fimone.agent.tools.mcp_config import (
    SecretRefused,
    parse_mcp_servers,
    resolve_secrets,
    secret_names,
)
from fimone.agent.tools.mcp_results import (
    MAX_RESULT_CHARS,
    NAME_RULE,
    result_output,
    tool_name,
)
from fimone.agent.tools.registry import Tool, ToolRegistry

# -- names -----------------------------------------------------------------------------------


@given(st.text(min_size=1, max_size=80), st.text(min_size=1, max_size=120))
def test_every_name_fits_every_provider_and_is_the_same_each_time(server, tool):
    name = tool_name(server, tool)
    assert NAME_RULE.match(name)
    assert name == tool_name(server, tool)


def test_a_plain_name_is_kept_and_a_long_or_odd_one_gets_a_hash():
    assert tool_name("github", "create_issue") == "github__create_issue"
    dotted = tool_name("files", "read.file")
    assert dotted.startswith("files__read_file_") and len(dotted) == len("files__read_file_") + 8
    long_a, long_b = tool_name("s", "x" * 80 + "a"), tool_name("s", "x" * 80 + "b")
    assert len(long_a) == 64 and long_a != long_b


# -- the file format --------------------------------------------------------------------------


def test_the_standard_entries_and_fimones_own_keys_are_read():
    parsed = parse_mcp_servers(
        {
            "mcpServers": {
                "files": {"command": "npx", "args": ["-y", "server"], "env": {"A": "1"}},
                "gh": {
                    "type": "streamable-http",
                    "url": "https://example.com/mcp",
                    "headers": {"Authorization": "Bearer ${GITHUB_API_KEY}"},
                    "allowedTools": ["search"],
                    "needsApproval": ["create_issue"],
                    "timeout": 5,
                },
            }
        }
    )
    assert parsed.errors == []
    files, gh = parsed.servers
    assert (files.transport, files.command, files.args, files.env) == (
        "stdio",
        "npx",
        ("-y", "server"),
        (("A", "1"),),
    )
    assert (gh.transport, gh.url, gh.timeout) == ("http", "https://example.com/mcp", 5.0)
    assert gh.allows("search") and not gh.allows("delete")
    assert gh.needs_approval("create_issue") and not gh.needs_approval("search")
    assert gh.secret_names() == ["GITHUB_API_KEY"]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"type": "sse", "url": "https://x/sse"}, "SSE"),
        ({}, "command"),
        ({"command": "x", "args": "not a list"}, "args"),
        ({"url": "ftp://x"}, "url"),
        ({"command": "x", "timeout": -1}, "timeout"),
        ({"url": "https://x", "headers": {"A": ["b"]}}, "headers"),
    ],
)
def test_a_bad_entry_is_left_out_with_a_reason_and_the_others_stay(entry, message):
    parsed = parse_mcp_servers({"mcpServers": {"bad": entry, "good": {"command": "ok"}}})
    assert [s.name for s in parsed.servers] == ["good"]
    assert len(parsed.errors) == 1 and message in parsed.errors[0]


def test_a_file_without_mcpservers_says_so():
    assert parse_mcp_servers([1, 2]).errors and parse_mcp_servers({"servers": {}}).errors


def test_secrets_are_named_and_resolved_through_the_lookup_only():
    assert secret_names("Bearer ${A_API_KEY} and ${env:B_API_KEY}") == ["A_API_KEY", "B_API_KEY"]

    def lookup(name):
        if name != "A_API_KEY":
            raise SecretRefused(name)
        return "va"

    assert resolve_secrets("Bearer ${A_API_KEY}", lookup) == "Bearer va"
    with pytest.raises(SecretRefused):
        resolve_secrets("${SECRET_KEY}", lookup)


# -- results ----------------------------------------------------------------------------------


def result(*content, structured=None, error=False):
    return types.CallToolResult(
        content=list(content), structured_content=structured, is_error=error
    )


def test_structured_content_is_given_once():
    as_text = types.TextContent(type="text", text=json.dumps({"a": 1}))
    assert json.loads(
        result_output("s", "t", result(as_text, structured={"a": 1}), vision=False).text
    ) == {"a": 1}
    wrapped = result(types.TextContent(type="text", text="hi"), structured={"result": "hi"})
    assert result_output("s", "t", wrapped, vision=False).text == "hi"
    only = result(structured={"rows": [1, 2]})
    assert json.loads(result_output("s", "t", only, vision=False).text) == {"rows": [1, 2]}


def test_other_content_is_named_and_an_error_reads_as_one():
    blob = types.EmbeddedResource(
        type="resource",
        resource=types.BlobResourceContents(uri="file:///a.bin", blob="AAAA", mime_type="x/y"),
    )
    link = types.ResourceLink(type="resource_link", name="doc", uri="file:///doc.md")
    audio = types.AudioContent(type="audio", data="AAAA", mime_type="audio/wav")
    text = result_output("s", "t", result(blob, link, audio), vision=True).text
    assert "file:///a.bin" in text and "file:///doc.md" in text and "audio/wav" in text
    failed = result_output(
        "s", "t", result(types.TextContent(type="text", text="no"), error=True), vision=False
    )
    assert failed.text.startswith("Error: ") and failed.text.endswith("no")
    assert result_output("s", "t", result(), vision=False).text == "(the tool returned nothing)"


def test_a_huge_result_is_cut_with_a_sentence_saying_so():
    exact = types.TextContent(type="text", text="x" * MAX_RESULT_CHARS)
    assert result_output("s", "t", result(exact), vision=False).text == exact.text
    huge = types.TextContent(type="text", text="y" * (MAX_RESULT_CHARS + 1))
    text = result_output("s", "t", result(huge), vision=False).text
    assert text.startswith("y" * MAX_RESULT_CHARS + "\n\n[The result was cut here")
    assert f"returned {MAX_RESULT_CHARS + 1:,} characters" in text
    assert text.count("y") == MAX_RESULT_CHARS


# -- argument checks of arbitrary schemas ----------------------------------------------------


async def echo(**arguments):
    return json.dumps(arguments, sort_keys=True)


SCHEMAS_AND_VALID_CALLS = [
    (
        {
            "type": "object",
            "properties": {"q": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
        },
        {"q": 3},
    ),
    (
        {"type": "object", "properties": {"q": {"type": ["string", "null"]}}, "required": ["q"]},
        {"q": None},
    ),
    ({"type": "object", "properties": {"q": {"type": ["string", "integer"]}}}, {"q": 4}),
    ({"type": "object", "properties": {"q": {"enum": [{"a": 1}, [2]]}}}, {"q": {"a": 1}}),
    (
        {
            "type": "object",
            "properties": {"q": {"$ref": "#/$defs/x"}},
            "$defs": {"x": {"type": "string"}},
        },
        {"q": "s"},
    ),
    ({"type": "object", "properties": {"q": True}}, {"q": [1, {"b": 2}]}),
    (
        {"type": "object", "properties": {"q": {"type": "array", "items": [{"type": "string"}]}}},
        {"q": ["a", 1]},
    ),
    ({"type": "object", "additionalProperties": {"type": "string"}}, {"any": "x", "other": "y"}),
    ({"type": "object", "properties": {"n": {"type": "number"}}}, {"n": 2}),
    (
        {
            "type": "object",
            "properties": {"from": {"type": "string"}, "my-arg": {"type": "string"}},
        },
        {"from": "a", "my-arg": "b"},
    ),
    ({"type": "object"}, {}),
    ({"properties": "nonsense", "required": "also"}, {}),
]


@pytest.mark.parametrize(("schema", "arguments"), SCHEMAS_AND_VALID_CALLS)
async def test_a_call_the_schema_allows_is_never_refused(schema, arguments):
    tools = ToolRegistry([Tool(name="t", description="", parameters=schema, func=echo)])
    out = (await tools.run_output("t", json.dumps(arguments))).text
    assert not out.startswith("Error"), out
    assert json.loads(out) == arguments


async def test_the_plain_parts_are_still_checked():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    tools = ToolRegistry([Tool(name="t", description="", parameters=schema, func=echo)])
    assert (await tools.run_output("t", '{"n": "2"}')).text.startswith("Error: bad arguments")
    assert (await tools.run_output("t", "{}")).text.startswith("Error: bad arguments")

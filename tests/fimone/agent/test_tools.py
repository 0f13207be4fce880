"""Tool registry and built-in tools: errors come back as readable text."""

import asyncio
import json
from datetime import UTC, datetime

import pytest

from fimone.agent.tools import (
    RecalledImage,
    Tool,
    ToolRegistry,
    calculator_tool,
    current_time_tool,
    default_tools,
    recall_tool,
)

FIXED_NOW = datetime(2026, 3, 14, 15, 9, 26, tzinfo=UTC)


def echo_tool(**overrides) -> Tool:
    async def echo(text: str, times: int = 1) -> str:
        return text * times

    fields = {
        "name": "echo",
        "description": "repeat text",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string"}, "times": {"type": "integer"}},
            "required": ["text"],
        },
        "func": echo,
    }
    return Tool(**{**fields, **overrides})


@pytest.fixture
def registry_with_echo():
    return ToolRegistry([echo_tool()])


async def test_runs_a_tool_with_json_arguments(registry_with_echo):
    assert await registry_with_echo.run("echo", '{"text": "ab", "times": 3}') == "ababab"


async def test_openai_tools_shape(registry_with_echo):
    (spec,) = registry_with_echo.openai_tools()
    assert spec["type"] == "function"
    assert spec["function"]["name"] == "echo"
    assert spec["function"]["parameters"]["required"] == ["text"]


def test_duplicate_names_are_refused(registry_with_echo):
    with pytest.raises(ValueError, match="already registered"):
        registry_with_echo.register(echo_tool())


@pytest.mark.parametrize(
    ("name", "arguments", "fragment"),
    [
        ("nope", "{}", "unknown tool 'nope'"),
        ("echo", "{not json", "not valid JSON"),
        ("echo", "[1, 2]", "must be a JSON object"),
        ("echo", "{}", "argument text: Field required"),
        ("echo", '{"text": null}', "argument text: Input should be a valid string"),
        ("echo", '{"text": 5}', "argument text: Input should be a valid string"),
        ("echo", '{"text": "a", "times": "2"}', "argument times: Input should be a valid integer"),
        ("echo", '{"text": "a", "times": true}', "argument times: Input should be a valid integer"),
        ("echo", '{"text": "a", "times": 2.5}', "argument times: Input should be a valid integer"),
    ],
)
async def test_faults_become_error_text(registry_with_echo, name, arguments, fragment):
    result = await registry_with_echo.run(name, arguments)
    assert result.startswith("Error:")
    assert fragment in result


async def test_unknown_tool_lists_the_available_ones(registry_with_echo):
    assert "Available tools: echo" in await registry_with_echo.run("calc", "{}")


async def test_extra_arguments_are_ignored(registry_with_echo):
    assert await registry_with_echo.run("echo", '{"text": "x", "mood": "happy"}') == "x"


async def test_a_null_optional_argument_means_the_default(registry_with_echo):
    assert await registry_with_echo.run("echo", '{"text": "x", "times": null}') == "x"


async def test_every_wrong_argument_is_named_for_the_model():
    async def pick(colour: str, sizes: list[int]) -> str:
        return f"{colour} {sizes}"

    schema = {
        "type": "object",
        "properties": {
            "colour": {"type": "string", "enum": ["red", "blue"]},
            "sizes": {"type": "array", "items": {"type": "integer"}},
        },
        "required": ["colour", "sizes"],
    }
    registry = ToolRegistry([Tool("pick", "choose", schema, pick)])
    assert await registry.run("pick", '{"colour": "red", "sizes": [1, 2]}') == "red [1, 2]"
    result = await registry.run("pick", '{"colour": "green", "sizes": [1, "x"]}')
    assert result == (
        "Error: bad arguments for pick: argument colour: Input should be 'red' or 'blue'; "
        "argument sizes[1]: Input should be a valid integer"
    )


async def test_empty_arguments_mean_no_arguments():
    registry = ToolRegistry([current_time_tool(clock=lambda: FIXED_NOW)])
    assert (await registry.run("current_time", "")).startswith("2026-03-14T15:09:26+00:00")


async def test_a_raising_tool_becomes_error_text():
    async def boom(text: str) -> str:
        raise RuntimeError("disk on fire")

    registry = ToolRegistry([echo_tool(func=boom)])
    result = await registry.run("echo", '{"text": "x"}')
    assert result == "Error: tool echo failed: RuntimeError: disk on fire"


async def test_a_slow_tool_times_out():
    never = asyncio.Event()

    async def slow(text: str) -> str:
        await never.wait()
        return "late"

    registry = ToolRegistry([echo_tool(func=slow, timeout=0.01)])
    assert await registry.run("echo", '{"text": "x"}') == (
        "Error: tool echo timed out after 0.01 seconds."
    )


async def test_cancellation_is_not_swallowed():
    started = asyncio.Event()

    async def slow(text: str) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    registry = ToolRegistry([echo_tool(func=slow)])
    task = asyncio.create_task(registry.run("echo", '{"text": "x"}'))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_calculator_tool():
    registry = ToolRegistry([calculator_tool()])
    assert await registry.run("calculator", json.dumps({"expression": "1234 * 5678"})) == "7006652"
    assert await registry.run("calculator", '{"expression": "1/0"}') == "Error: division by zero"


async def test_current_time_in_utc_and_in_a_zone():
    tool = current_time_tool(clock=lambda: FIXED_NOW)
    registry = ToolRegistry([tool])
    utc = await registry.run("current_time", "{}")
    assert utc == "2026-03-14T15:09:26+00:00 (Saturday, 14 March 2026, 15:09 UTC)"
    tokyo = await registry.run("current_time", '{"timezone": "Asia/Tokyo"}')
    assert tokyo.startswith("2026-03-15T00:09:26+09:00")
    bad = await registry.run("current_time", '{"timezone": "Mars/Olympus"}')
    assert bad.startswith("Error: unknown time zone 'Mars/Olympus'")


async def test_recall_returns_the_passages_verbatim_and_passes_the_limit():
    seen = []

    async def search(query: str, limit: int) -> list[str]:
        seen.append((query, limit))
        return ["My locker code is 4711-B.", "Locker moved to floor 3."]

    registry = ToolRegistry([recall_tool(search, limit=7)])
    result = await registry.run("recall", '{"query": " locker "}')
    assert seen == [("locker", 7)]
    assert "[1] My locker code is 4711-B.\n\n[2] Locker moved to floor 3." in result


async def test_recall_with_no_match_says_so():
    async def search(query: str, limit: int) -> list[str]:
        return []

    result = await ToolRegistry([recall_tool(search)]).run("recall", '{"query": "zebra"}')
    assert result == "No passage of this conversation matches 'zebra'."


async def test_rj3_recall_names_the_projects_files_in_what_it_searched():
    async def search(query: str, limit: int) -> list[str]:
        return ["project file depot.docx, page 2: the gate code is 4471"] if query == "gate" else []

    scope = "this conversation and its project's files"
    registry = ToolRegistry([recall_tool(search, scope=scope)])
    found = await registry.run("recall", '{"query": "gate"}')
    assert found.startswith(f"Passages of {scope} matching 'gate'")
    missed = await registry.run("recall", '{"query": "zebra"}')
    assert missed == f"No passage of {scope} matches 'zebra'."


async def test_recall_names_found_images_and_hands_their_pixels_on_rv_4():
    part = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}

    async def search(query, limit):
        return [
            "user (2026-01-01 10:00, message #3): the receipt",
            RecalledImage(
                label="image sent by the user: [image: r.png, 9x9 — a receipt]", part=part
            ),
            RecalledImage(label="image sent by the user: [image: s.png, 9x9 — blind]"),
        ]

    registry = ToolRegistry([recall_tool(search)])
    output = await registry.run_output("recall", '{"query": "receipt"}')
    assert "[2] image sent by the user: [image: r.png, 9x9 — a receipt]" in output.text
    assert "[3] image sent by the user: [image: s.png" in output.text
    assert output.images == (part,)  # only the one with pixels
    assert await registry.run("recall", '{"query": "receipt"}') == output.text


def test_default_tools_offer_recall_only_with_a_search():
    assert default_tools().names() == ["calculator", "current_time"]

    async def search(query, limit):
        return []

    assert default_tools(recall_search=search).names() == ["calculator", "current_time", "recall"]


async def test_recall_reads_a_cut_result_on_from_the_start_its_line_names_rt_1():
    """A result cut to fit ends with 'read on with recall(id=…, start=N)': recall with that
    start gives the rest, from exactly where the cut stopped."""
    from fimone.agent.tools.registry import ToolResults

    async def search(query, limit):
        return []

    results = ToolResults()
    text = "".join(f"line {i}\n" for i in range(3_000))
    results.add("c1", "pages__read", '{"n": 1}', text)
    registry = ToolRegistry([recall_tool(search, results=results)])
    rest = await registry.run("recall", '{"id": "c1", "start": 1000}')
    assert rest.startswith(
        f"The result of pages__read({{\"n\": 1}}), id 'c1', from character 1,000 of "
        f"{len(text):,}:\n\n"
    )
    assert rest.endswith(text[1_000:])
    whole = await registry.run("recall", '{"id": "c1"}')
    assert whole.endswith("\n\n" + text)
    past = await registry.run("recall", f'{{"id": "c1", "start": {len(text)}}}')
    assert past.startswith("Error: start must be between 0 and")

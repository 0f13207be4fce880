"""A test-only tool with big outputs: ``read_log {n}`` returns log ``n`` — about
``LOG_CHARS`` characters whose one fact (``log_fact(n)``) sits deep inside, never on the
first line. In-process tests add it to a run's tools with ``with_log_tool(run_deps)``."""

from __future__ import annotations

from fimone.agent import Tool

LOG_CHARS = 1_500


def log_fact(n: int) -> str:
    return f"checksum of batch {n} is 7{n:03d}-4411-{n * 97:05d}"


def log_text(n: int, chars: int = LOG_CHARS) -> str:
    lines = [f"== log {n}: nightly import =="]
    i = 0
    while sum(len(line) + 1 for line in lines) < chars:
        lines.append(f"{i:05d} INFO row {i} of batch {n} imported without warnings")
        if i == 20:
            lines.append(log_fact(n))
        i += 1
    return "\n".join(lines)


def log_tools() -> list[Tool]:
    async def read_log(n: int) -> str:
        return log_text(n)

    return [
        Tool(
            name="read_log",
            description="Read one nightly import log by its number.",
            parameters={
                "type": "object",
                "properties": {"n": {"type": "integer", "description": "log number"}},
                "required": ["n"],
            },
            func=read_log,
            timeout=5.0,
            source="test",
        )
    ]


def with_log_tool(run_deps) -> None:
    """New runs get ``read_log`` besides their usual tools."""
    make_tools = run_deps.current.make_tools

    def tools_with_log(*args, **kwargs):
        tools = make_tools(*args, **kwargs)
        for tool in log_tools():
            tools.register(tool)
        return tools

    run_deps.use(make_tools=tools_with_log)

"""A test-only tool with big outputs: ``read_log {n}`` returns log ``n`` — about
``LOG_CHARS`` characters whose one fact (``log_fact(n)``) sits deep inside, never on the
first line. In-process tests set ``FIMONE_EXTRA_TOOLS=tests.support.log_tool:log_tools``;
a live server is started with it."""

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

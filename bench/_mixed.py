"""A deterministic mixed conversation for the compaction benches (not a benchmark itself).

User requests that state facts (amounts with units, order ids, URLs, paths, dates, names,
Chinese values), assistant answers, tool rounds whose results are log excerpts full of
timestamps, IPs and counters, and now and then a pasted log of several thousand characters.
"""

from __future__ import annotations

import json
import random

from contextmgmt.core.messages import ChatMessage, ToolCall

_NAMES = ["Amelia Novak", "Jonas Berger", "Priya Raman", "李明", "Carlos Ortega", "Mei Tanaka"]
_CITIES = ["Lisbon", "Hamburg", "Osaka", "Toronto", "成都", "Nairobi"]
_ZH = ["预算上限是每月八千元", "交付日期定在周五", "请用中文回复", "仓库在上海浦东"]


def _log_line(rng: random.Random, i: int) -> str:
    level = rng.choice(["INFO", "INFO", "INFO", "WARN", "DEBUG"])
    ip = f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
    return (
        f"2026-03-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
        f"{rng.randint(0, 59):02d}Z {level} worker-{rng.randint(1, 9)} "
        f"req={rng.randint(1000, 99999)}"
        f" from {ip} took {rng.randint(1, 900)}ms status={rng.choice([200, 200, 204, 404, 500])}"
        f" seq={i}"
    )


def pasted_log(rng: random.Random, chars: int) -> str:
    lines: list[str] = []
    size = 0
    i = 0
    while size < chars:
        line = _log_line(rng, i)
        lines.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(lines)


def _user(rng: random.Random, turn: int) -> str:
    kind = turn % 6
    name = rng.choice(_NAMES)
    if kind == 0:
        return (
            f"Order ORD-{40000 + turn * 37} for {name} weighs {rng.randint(2, 90)}.{turn % 10} kg;"
            f" ship it to {rng.choice(_CITIES)} before 2026-0{turn % 9 + 1}-{turn % 27 + 1:02d}."
        )
    if kind == 1:
        return (
            f"The staging config lives at /srv/app/conf/stage-{turn}.yaml and the dashboard is "
            f"https://grafana.example.com/d/{turn:04x}/latency?orgId=2. Can you check it?"
        )
    if kind == 2:
        return f"{rng.choice(_ZH)}，编号 ZH-{turn:05d}，金额 {turn * 13} 元。"
    if kind == 3:
        return (
            f"We decided the retry budget must stay under {turn % 7 + 2} attempts and the "
            f"timeout at {turn * 3 % 90 + 10} s. {name} approved it."
        )
    if kind == 4:
        return "Thanks, that helps. What should we look at next?"
    return f"Here is the log from worker-{turn % 9}:\n" + pasted_log(rng, rng.randint(600, 2500))


def _answer(rng: random.Random, turn: int) -> str:
    return (
        f"I looked at step {turn}: the numbers are consistent, latency p95 is "
        f"{rng.randint(80, 400)} ms and error rate {rng.randint(0, 30) / 10}%. "
        "Next I would compare it with last week's baseline and confirm the owner."
    )


def mixed_conversation(count: int = 500, *, seed: int = 7) -> list[ChatMessage]:
    """``count`` messages: system prompt, then user / assistant turns and tool rounds."""
    rng = random.Random(seed)
    msgs = [ChatMessage(role="system", content="You are a helpful operations assistant.")]
    turn = 0
    while len(msgs) < count:
        turn += 1
        msgs.append(ChatMessage(role="user", content=_user(rng, turn)))
        if turn % 3 == 0 and len(msgs) + 3 <= count:
            cid = f"call_{turn}"
            args = json.dumps({"query": f"latency worker-{turn % 9}", "limit": 50})
            msgs.append(
                ChatMessage(
                    role="assistant",
                    content=None,
                    tool_calls=[ToolCall(id=cid, name="search_logs", arguments=args)],
                )
            )
            msgs.append(ChatMessage(role="tool", tool_call_id=cid, content=pasted_log(rng, 1200)))
        msgs.append(ChatMessage(role="assistant", content=_answer(rng, turn)))
    msgs = msgs[:count]
    while msgs[-1].role != "user" and len(msgs) > 2:  # end on a user turn, like a request
        msgs.pop()
    msgs[-1].pinned = True
    return msgs

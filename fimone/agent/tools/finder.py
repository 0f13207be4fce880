"""Which tool definitions a request sends: all of them, or a finder plus the tools in use.

Definitions are a tier of the context with their own share of the budget
(``contextmgmt.core.tiers``). When every enabled tool fits that share, every one is sent.
When they do not (an MCP server listing hundreds of tools), or there are more than a
request may carry (``MAX_TOOL_DEFINITIONS``), each call sends the built-in
tools, ``find_tools`` — which searches all enabled tools by name and description — and
the tools this conversation used before, as far as the share allows. A tool
``find_tools`` finds joins the definitions of the next call, appended after those
already sent (the provider's prompt cache keeps the prefix), while the share has room;
the history never pays for it (docs/tools.md, "Many tools").

Every registered tool stays callable by name whether or not its definition was sent: a
model that knows the name (from a finder's result) can call it.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.tiers import TierSplit, split_budget, tool_definitions_cap
from contextmgmt.core.tokens import estimate_tokens

from .registry import BUILTIN_SOURCE, Tool, ToolRegistry

FINDER_NAME = "find_tools"
# A request carries at most this many definitions whatever their tokens: OpenAI's API
# refuses more than 128 tools in one request.
MAX_TOOL_DEFINITIONS = 128
# A finder's answer lists at most this many tools: their definitions join the next call.
MAX_FOUND = 5
# The tier keeps room for this many finder answers' tools beside the tools in use.
FOUND_ROOM = 2
_DESCRIPTION_CHARS = 300
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def definition_tokens(definitions: Sequence[dict[str, Any]]) -> int:
    """Tokens of tool definitions as they are sent: one JSON list beside the messages."""
    if not definitions:
        return 0
    return estimate_tokens(json.dumps(list(definitions), ensure_ascii=False))


def _added_tokens(definition: dict[str, Any]) -> int:
    """At least what one definition adds to a list's ``definition_tokens``: its own, and
    two for the separator and the rounding of the sum."""
    return estimate_tokens(json.dumps(definition, ensure_ascii=False)) + 2


_FINDER_DESCRIPTION = (
    "Search the tools available beyond those listed here, by name and description "
    "(a few words: what the tool should do, or part of its name). The tools found "
    "can be called from your next step on."
)
_FINDER_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "what to look for"}},
    "required": ["query"],
}
FINDER_DEFINITION = {
    "type": "function",
    "function": {
        "name": FINDER_NAME,
        "description": _FINDER_DESCRIPTION,
        "parameters": _FINDER_PARAMETERS,
    },
}


def finder_tool(find: Callable[[str], str]) -> Tool:
    """``find_tools(query)``: ``find`` answers (a ``ToolOffer``'s, which adds what it
    found to the next call's definitions)."""

    async def find_tools(query: str) -> str:
        return find(query)

    return Tool(
        name=FINDER_NAME,
        description=_FINDER_DESCRIPTION,
        parameters=_FINDER_PARAMETERS,
        func=find_tools,
        timeout=5.0,
    )


def tools_called(messages: Sequence[ChatMessage]) -> tuple[str, ...]:
    """Names of the tools ``messages`` call (a loaded history's tool records), the most
    recent first: the tools a conversation is using."""
    names = (c.name for m in reversed(messages) for c in reversed(m.tool_calls or ()))
    return tuple(dict.fromkeys(names))


def tool_tier(
    tools: ToolRegistry | None,
    budget: int,
    *,
    used: Sequence[str] = (),
    instructions: int = 0,
    query: int = 0,
) -> TierSplit:
    """The request's tiers with these tools, ``used`` the names of those the conversation
    used (``instructions``, ``query``: their tokens)."""
    offer = ToolOffer(tools if tools is not None else ToolRegistry(), budget, used=used)
    if instructions == 0 and query == 0:
        return offer.split
    return dataclasses.replace(
        offer.split,
        instructions=instructions,
        query=query,
        history=max(0, budget - instructions - offer.split.tools - query),
    )


class ToolOffer:
    """The tool definitions one loop sends with each call (see the module's docstring),
    and the tools it runs (``registry``: the run's, plus ``find_tools`` when the
    definitions are cut; the run's registry itself is left as it was).

    ``used``: names of the tools this conversation called before, most recent first; the
    ones that fit the share are sent from the first call on. Beside them the tier keeps
    room for ``FOUND_ROOM`` finder answers' tools (of the tools' mean size), within the
    share: what the finder adds beyond that room is given by name and arguments instead.
    """

    def __init__(self, tools: ToolRegistry, budget: int, *, used: Sequence[str] = ()) -> None:
        listed = [t for t in tools.tools() if t.name != FINDER_NAME]
        everything = definition_tokens([t.openai() for t in listed])
        too_many = len(listed) > MAX_TOOL_DEFINITIONS
        self.registry = tools
        self._names = [t.name for t in tools.tools()]
        self._definitions = tools.openai_tools()
        self.split = split_budget(
            budget, instructions=0, tool_definitions=everything, too_many=too_many
        )
        self._tokens = self._cap = self.split.tools  # all of them, when they are not cut
        if not self.split.deferred:
            return
        self.registry = ToolRegistry([*listed, finder_tool(self.find)], results=tools.results)
        always = [t for t in listed if t.source == BUILTIN_SOURCE]
        self._names = [*(t.name for t in always), FINDER_NAME]
        self._definitions = [*(t.openai() for t in always), FINDER_DEFINITION]
        self._tokens = floor = definition_tokens(self._definitions)
        self._cap = max(tool_definitions_cap(budget), floor)
        for name in dict.fromkeys(used):
            self._add(name)
        mean = everything // max(1, len(listed))
        self.split = split_budget(
            budget,
            instructions=0,
            tool_definitions=everything,
            always=floor,
            cut=self._tokens + FOUND_ROOM * MAX_FOUND * (mean + 2),
            too_many=too_many,
        )
        self._cap = self.split.tools

    @property
    def deferred(self) -> bool:
        """Whether the definitions were cut to the finder and the tools in use."""
        return self.split.deferred

    def definitions(self) -> list[dict[str, Any]] | None:
        """What the next call sends (a fresh list; None: no tools)."""
        return list(self._definitions) or None

    def names(self) -> list[str]:
        return list(self._names)

    def tokens(self) -> int:
        """What the definitions the next call sends take."""
        return self._tokens

    def _add(self, name: str) -> bool:
        """Append ``name``'s definition if it is a tool not yet sent and it fits the share."""
        tool = self.registry.get(name)
        if tool is None or name in self._names or len(self._names) >= MAX_TOOL_DEFINITIONS:
            return False
        definition = tool.openai()
        tokens = _added_tokens(definition)
        if self._tokens + tokens > self._cap:
            return False
        self._names.append(name)
        self._definitions.append(definition)
        self._tokens += tokens
        return True

    def find(self, query: str) -> str:
        """The finder's answer to ``query``: the best matches, each added to the next
        call's definitions (or said to be there already, or not to fit)."""
        candidates = [t for t in self.registry.tools() if t.name != FINDER_NAME]
        ranked = rank_tools(query, candidates)[:MAX_FOUND]
        if not ranked:
            return (
                f"No tool matches {query!r}. Try other words: what the tool should do, "
                "or part of its name."
            )
        lines = []
        for tool in ranked:
            summary = f"- {tool.name}: {_short(tool.description)}"
            if tool.name in self._names:
                lines.append(f"{summary} (already available)")
            elif self._add(tool.name):
                lines.append(summary)
            else:
                # The share is full: its schema comes in the answer instead, callable by name.
                schema = json.dumps(tool.parameters, ensure_ascii=False)
                lines.append(f"{summary} (call it by name; its arguments: {schema})")
        return (
            "Tools found (call them in your next step):\n" + "\n".join(lines)
            if lines
            else "No tool found."
        )


def _short(text: str) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= _DESCRIPTION_CHARS else text[: _DESCRIPTION_CHARS - 1] + "…"


def _words(text: str) -> list[str]:
    """Lower-case words (``many__archive_ticket``: many, archive, ticket); a single letter
    ("a") says nothing."""
    return [w.lower() for w in _WORD.findall(text or "") if len(w) > 1 or not w.isascii()]


def rank_tools(query: str, tools: Sequence[Tool]) -> list[Tool]:
    """``tools`` that match ``query``, best first: the whole name asked for first, then by
    the query's words found in the name (three points each), then in the description
    (one), a word's beginning counting half (three letters or more). Ties keep the
    registry's order. Tools matching nothing are left out."""
    wanted = _words(query)
    whole = query.strip().lower()
    scored: list[tuple[float, int, Tool]] = []
    for index, tool in enumerate(tools):
        name = _words(tool.name)
        described = _words(tool.description)
        score = 100.0 if tool.name.lower() == whole else 0.0
        for word in wanted:
            score += _match(word, name) * 3 + _match(word, described)
        if score > 0:
            scored.append((-score, index, tool))
    scored.sort(key=lambda item: (item[0], item[1]))
    return [tool for _, _, tool in scored]


def _match(word: str, words: list[str]) -> float:
    if word in words:
        return 1.0
    if len(word) >= 3 and any(w.startswith(word) for w in words):
        return 0.5
    return 0.0

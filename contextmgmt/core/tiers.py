"""The context's tiers and their shares of one request's input budget, cheapest first:
instructions (pinned, never compacted) → tool definitions → history → the current query
(docs/architecture.md, "Context tiers").

Tool definitions go with every call, outside the messages. Sent whole they would take
what the history needs: one server listing a few hundred tools fills a 32K window. So
they get at most ``TOOL_DEFINITIONS_SHARE`` of the budget. When all of them fit that
share they are all sent; when they do not, the request sends the tools that are always
there (the built-ins and a finder that searches the others by name and description)
plus the ones in use, and keeps room beside them, within the share, for the tools the
finder adds during the run: those join without taking anything from the history. The
history's room is what is left after the instructions, the tool tier and the query;
definitions are what is cut to make room, never the history.
"""

from __future__ import annotations

from dataclasses import dataclass

# Tool definitions take at most this share of the input budget (docs/tools.md, "Many
# tools": 300 MCP tools are ~30,000 tokens, a 32K window's whole input).
TOOL_DEFINITIONS_SHARE = 0.25


def tool_definitions_cap(budget: int) -> int:
    """What the tool definitions may take of an input budget of ``budget`` tokens."""
    return max(0, int(budget * TOOL_DEFINITIONS_SHARE))


@dataclass(frozen=True, slots=True)
class TierSplit:
    """One request's budget split into its tiers (tokens)."""

    budget: int
    instructions: int
    tools: int  # what the tool definitions may take on every call of the request
    history: int  # the room left for the history (0 when nothing is left)
    query: int
    # All definitions would pass their share: a finder and the tools in use go instead.
    deferred: bool

    @property
    def total(self) -> int:
        return self.instructions + self.tools + self.history + self.query


def split_budget(
    budget: int,
    *,
    instructions: int,
    tool_definitions: int,
    always: int = 0,
    cut: int | None = None,
    query: int = 0,
    too_many: bool = False,
) -> TierSplit:
    """The tiers of a request whose instructions, tool definitions (all of them) and query
    take the given tokens. When the definitions pass their share (or ``too_many``: more
    tools than a request may carry, whatever their tokens) they are cut: the tier is then
    ``cut`` (the tools always sent, those in use and room for the ones a finder adds;
    default the whole share), never more than the share and never less than ``always``
    (the built-in tools and the finder, sent in any case).

    The history gets what is left: however many tools there are, it never gets less than
    ``budget − instructions − query − max(cap, always)``.
    """
    cap = tool_definitions_cap(budget)
    deferred = too_many or tool_definitions > max(cap, always)
    if deferred:
        tools = max(always, min(cap if cut is None else cut, cap))
    else:
        tools = max(0, tool_definitions)
    history = max(0, budget - instructions - tools - query)
    return TierSplit(
        budget=budget,
        instructions=instructions,
        tools=tools,
        history=history,
        query=query,
        deferred=deferred,
    )

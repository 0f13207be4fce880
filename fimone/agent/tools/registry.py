"""The tool registry: a tool's schema, its argument validation and the way it is run.

``ToolRegistry.run`` never raises for a tool's fault: bad JSON, an unknown tool, missing or
mistyped arguments (checked by pydantic against the tool's JSON schema), a timeout or an
exception all come back as an ``Error: …`` text that the model reads as the tool result and
can correct. Only cancellation propagates.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from functools import cached_property
from types import GenericAlias
from typing import Annotated, Any, Literal, NotRequired, Required, Union

from pydantic import ConfigDict, Strict, TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic needs it on Python < 3.12

from ..validation import describe


@dataclass(frozen=True)
class ToolOutput:
    """A tool's result: its text, and images the model should see with its next call."""

    text: str
    images: tuple[dict[str, Any], ...] = ()  # OpenAI image_url parts


@dataclass(frozen=True)
class RecalledImage:
    """An earlier image ``recall`` found: ``label`` names it in the result text; ``part``
    (an OpenAI image_url part, or None when the model cannot see images) is sent along."""

    label: str
    part: dict[str, Any] | None = None


@dataclass(frozen=True)
class KeptResult:
    """One tool call of a run and its whole result."""

    call_id: str
    name: str
    arguments: str
    text: str


class ToolResults:
    """The whole results of one run's tool calls, by call id: what a masked result's stub
    points to (``recall`` with its id brings it back), and what the run stores at its end."""

    def __init__(self) -> None:
        self._by_id: dict[str, KeptResult] = {}

    def add(self, call_id: str, name: str, arguments: str, text: str) -> None:
        self._by_id[call_id] = KeptResult(call_id, name, arguments, text)

    def get(self, call_id: str) -> KeptResult | None:
        return self._by_id.get(call_id)

    def all(self) -> list[KeptResult]:
        return list(self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)


ToolFunc = Callable[..., Awaitable[str | ToolOutput]]
RecallSearch = Callable[[str, int], Awaitable[list[str | RecalledImage]]]

DEFAULT_TOOL_TIMEOUT = 20.0
BUILTIN_SOURCE = "builtin"
# How a single tool switched off for a conversation is written among its switched-off
# sources ("tool:fetch_url"): one list holds both, so a run reads one value.
TOOL_SWITCH_PREFIX = "tool:"


def tool_switch_key(name: str) -> str:
    """The entry that switches off the one tool ``name`` (see TOOL_SWITCH_PREFIX)."""
    return f"{TOOL_SWITCH_PREFIX}{name}"


def switched_off_tool(tool: Tool, off: Collection[str]) -> bool:
    """Whether ``off`` (a conversation's switched-off entries) removes ``tool`` from a run:
    its own switch, or its source's (the built-in tools are switched one by one only)."""
    if tool_switch_key(tool.name) in off:
        return True
    return tool.source != BUILTIN_SOURCE and tool.source in off


# JSON-schema types as strict Python types: "2" is no integer and true is no number.
_JSON_TYPES: dict[str, Any] = {
    "string": Annotated[str, Strict()],
    "integer": Annotated[int, Strict()],
    "number": Annotated[float, Strict()],
    "boolean": Annotated[bool, Strict()],
    "object": dict[str, Any],
}


_SCALARS = (str, int, float, bool, type(None))


def _annotation(schema: Any) -> Any:
    """The Python type a JSON-schema property describes.

    Plain types, enums of scalars, lists of types and arrays of these are checked; anything
    else (``anyOf``, ``$ref``, a schema given as ``true``, tuple ``items``, an enum of
    objects) is let through for the tool to judge: an MCP server's schema may use any of
    JSON Schema, and the check must never refuse a call the schema allows.
    """
    if not isinstance(schema, dict):
        return Any
    if "enum" in schema:
        values = schema["enum"]
        if isinstance(values, list) and values and all(isinstance(v, _SCALARS) for v in values):
            return Literal[tuple(values)]
        return Any
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [_annotation({**schema, "type": k}) if k != "null" else None for k in kind]
        if not kinds or Any in kinds:
            return Any
        return Union[tuple(type(None) if k is None else k for k in kinds)]  # noqa: UP007
    if kind == "array":
        return GenericAlias(list, (_annotation(schema.get("items", {})),))  # list[item]
    return _JSON_TYPES.get(kind, Any) if isinstance(kind, str) else Any


def _keeps_extra_keys(parameters: dict[str, Any]) -> bool:
    """Whether the schema asks for keys beyond its properties (a map of names to values)."""
    extra = parameters.get("additionalProperties")
    return bool(extra) or bool(parameters.get("patternProperties"))


def arguments_adapter(name: str, parameters: dict[str, Any]) -> TypeAdapter[Any]:
    """A validator of a tool's argument object built from its JSON schema.

    Required properties must be present and not null (unless their schema allows null); an
    optional one given as null counts as absent. Unknown extra keys are ignored: models add
    them, and refusing helps no one; a schema that allows more keys
    (``additionalProperties``) keeps them.
    """
    properties = parameters.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = parameters.get("required")
    required = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
    fields: dict[str, Any] = {}
    for key, schema in properties.items():
        kind = _annotation(schema)
        fields[key] = Required[kind] if key in required else NotRequired[kind | None]
    for key in required - fields.keys():
        fields[key] = Required[Any]
    arguments = TypedDict(f"{name}_arguments", fields)  # type: ignore[misc]
    extra: Literal["allow", "ignore"] = "allow" if _keeps_extra_keys(parameters) else "ignore"
    arguments.__pydantic_config__ = ConfigDict(extra=extra)  # type: ignore[attr-defined]
    return TypeAdapter(arguments)


@dataclass(frozen=True)
class Tool:
    """One callable tool. ``parameters`` is the JSON schema of its (object) arguments.

    ``needs_approval``: the run asks the user before each call (docs/protocol.md) unless
    the user approved the tool for the whole conversation. ``source`` names where the tool
    comes from (``builtin``, or e.g. ``mcp:<server>``): the composer's tools menu groups
    tools by it, and a user can switch a source other than ``builtin`` off for one
    conversation.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    func: ToolFunc
    timeout: float = DEFAULT_TOOL_TIMEOUT
    needs_approval: bool = False
    source: str = BUILTIN_SOURCE

    @cached_property
    def arguments(self) -> TypeAdapter[Any]:
        try:
            return arguments_adapter(self.name, self.parameters)
        except Exception:  # a schema beyond the checker: any JSON object, the tool judges
            return TypeAdapter(dict[str, Any])

    def openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class ToolRegistry:
    """Named tools; easy to extend with ``register``."""

    def __init__(
        self, tools: list[Tool] | None = None, *, results: ToolResults | None = None
    ) -> None:
        self._tools: dict[str, Tool] = {}
        # The run's whole tool results (shared with the recall tool that brings them back).
        self.results = results if results is not None else ToolResults()
        for tool in tools or []:
            self.register(tool)

    def remember(self, call: Any, text: str) -> None:
        """Keep a call's whole result (``call``: a ToolCall) for this run."""
        self.results.add(call.id, call.name, call.arguments, text)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def without_switched_off(self, off: Collection[str]) -> ToolRegistry:
        """These tools less those ``off`` switches off (``switched_off_tool``), sharing the
        run's results."""
        return ToolRegistry(
            [tool for tool in self._tools.values() if not switched_off_tool(tool, off)],
            results=self.results,
        )

    def openai_tools(self) -> list[dict[str, Any]]:
        return [tool.openai() for tool in self._tools.values()]

    def problem(self, name: str, arguments_json: str | None) -> str | None:
        """Why a call cannot run as asked (unknown tool, bad arguments), as the ``Error: …``
        text ``run`` would give; None when it can. Checked before the user is asked to
        approve a call: a call that cannot run is not put to the user."""
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(self._tools) or "none"
            return f"Error: unknown tool {name!r}. Available tools: {known}."
        try:
            _parse_arguments(tool, arguments_json)
        except ValueError as exc:
            return f"Error: bad arguments for {name}: {exc}"
        return None

    async def run(self, name: str, arguments_json: str | None) -> str:
        """Run a tool and return its text; every fault becomes a readable ``Error: …``."""
        return (await self.run_output(name, arguments_json)).text

    async def run_output(self, name: str, arguments_json: str | None) -> ToolOutput:
        """Run a tool: its text and any images it brings (see ``run``)."""
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(self._tools) or "none"
            return ToolOutput(f"Error: unknown tool {name!r}. Available tools: {known}.")
        try:
            kwargs = _parse_arguments(tool, arguments_json)
        except ValueError as exc:
            return ToolOutput(f"Error: bad arguments for {name}: {exc}")
        try:
            async with asyncio.timeout(tool.timeout):
                result = await tool.func(**kwargs)
        except TimeoutError:
            return ToolOutput(f"Error: tool {name} timed out after {tool.timeout:g} seconds.")
        except Exception as exc:  # a tool's own failure is a result the model can read
            return ToolOutput(f"Error: tool {name} failed: {type(exc).__name__}: {exc}")
        if isinstance(result, ToolOutput):
            return result
        return ToolOutput(result if isinstance(result, str) else json.dumps(result, default=str))


def _parse_arguments(tool: Tool, arguments_json: str | None) -> dict[str, Any]:
    """JSON text → keyword arguments, validated against the tool's schema."""
    text = (arguments_json or "").strip() or "{}"
    try:
        args = tool.arguments.validate_json(text)
    except ValidationError as exc:
        raise ValueError(_describe_arguments_error(exc)) from None
    required = tool.parameters.get("required")
    required = required if isinstance(required, list) else ()
    return {key: value for key, value in args.items() if value is not None or key in required}


def _describe_arguments_error(exc: ValidationError) -> str:
    first = exc.errors(include_url=False)[0]
    if first["type"] == "json_invalid":
        return f"arguments are not valid JSON ({first['ctx']['error']})"
    if not first["loc"]:
        return "arguments must be a JSON object"
    return describe(exc, prefix="argument ")

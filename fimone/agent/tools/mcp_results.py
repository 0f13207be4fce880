"""What the model reads of an MCP server's tools: their names and their results.

Names: ``<server>__<tool>``, which every provider accepts when it matches
``^[a-zA-Z0-9_-]{1,64}$``; a name with other characters or too long is cut and given a
short hash of the original, so it stays the same from run to run and two originals do not
meet in one name.

Results: text as it is; structured content as JSON (once: servers also send it as text);
images as image parts when the model sees images, else as a line naming them; embedded text
resources framed with their URI; ``isError`` as an ``Error: …`` text the model can act on;
a text over ``MAX_RESULT_CHARS`` cut with a sentence saying so.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import mcp_types as types

from .registry import ToolOutput

NAME_RULE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
MAX_NAME = 64
# An image larger than this (base64 characters) is named, not sent.
MAX_IMAGE_CHARS = 8_000_000
# A result's text beyond this is cut, with a sentence saying so. Every result is kept
# whole for ``recall`` and stored with the run; a server that answers with tens of MB must
# not fill the server's memory and database (about 100K tokens, far more than one call
# of any model's context can use).
MAX_RESULT_CHARS = 400_000


def tool_name(server: str, tool: str) -> str:
    """The namespaced name of ``tool`` of ``server`` (deterministic, provider-safe)."""
    raw = f"{server}__{tool}"
    if NAME_RULE.match(raw):
        return raw
    digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
    clean = _BAD_CHARS.sub("_", raw)[: MAX_NAME - len(digest) - 1]
    return f"{clean}_{digest}"


def _image_part(block: types.ImageContent) -> dict[str, Any]:
    return {
        "type": "image_url",
        "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"},
    }


def _resource_text(resource: Any) -> str:
    uri = str(getattr(resource, "uri", ""))
    mime = getattr(resource, "mime_type", None) or ""
    if isinstance(resource, types.TextResourceContents):
        return f"[resource {uri}{f' ({mime})' if mime else ''}]\n{resource.text}\n[end of {uri}]"
    size = len(getattr(resource, "blob", "") or "") * 3 // 4
    return f"[binary resource {uri}{f' ({mime})' if mime else ''}, {size:,} bytes, not shown]"


def _structured_shown(structured: Any, texts: list[str]) -> bool:
    """Whether a text block already says what the structured content says (FastMCP sends
    ``{"result": x}`` with ``x`` as text, and models as their JSON)."""
    if isinstance(structured, dict) and set(structured) == {"result"}:
        value = structured["result"]
        if any(text == (value if isinstance(value, str) else json.dumps(value)) for text in texts):
            return True
    for text in texts:
        try:
            if json.loads(text) == structured:
                return True
        except ValueError:
            continue
    return False


def _capped(text: str) -> str:
    if len(text) <= MAX_RESULT_CHARS:
        return text
    return (
        f"{text[:MAX_RESULT_CHARS]}\n\n[The result was cut here: the tool returned "
        f"{len(text):,} characters, of which the first {MAX_RESULT_CHARS:,} are kept. Ask the "
        "tool for a smaller part if it can give one.]"
    )


def result_output(
    server: str, tool: str, result: types.CallToolResult, *, vision: bool
) -> ToolOutput:
    """A ``tools/call`` result as the text (and images) the model gets."""
    parts: list[str] = []
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
            texts.append(block.text)
        elif isinstance(block, types.ImageContent):
            size = len(block.data) * 3 // 4
            if vision and len(block.data) <= MAX_IMAGE_CHARS and not result.is_error:
                images.append(_image_part(block))
                shown = f"{block.mime_type}, {size:,} bytes, shown after this result"
                parts.append(f"[image {len(images)}: {shown}]")
            else:
                why = "too large to show" if vision else "this model cannot see images"
                parts.append(f"[image: {block.mime_type}, {size:,} bytes; {why}]")
        elif isinstance(block, types.EmbeddedResource):
            parts.append(_resource_text(block.resource))
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource link: {block.name} {block.uri}]")
        elif isinstance(block, types.AudioContent):
            parts.append(f"[audio: {block.mime_type}, not shown]")
        else:
            parts.append(f"[{getattr(block, 'type', 'content')} content, not shown]")
    structured = result.structured_content
    if structured is not None and not _structured_shown(structured, texts):
        parts.append(json.dumps(structured, ensure_ascii=False, indent=2, default=str))
    text = _capped("\n\n".join(p for p in parts if p) or "(the tool returned nothing)")
    if result.is_error:
        return ToolOutput(f"Error: {tool_name(server, tool)} reported an error: {text}")
    return ToolOutput(text, tuple(images))

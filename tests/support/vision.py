"""A question with one image, and how many images a request to the scripted server held:
for the tests of endpoints that refuse images."""

from __future__ import annotations

from contextmgmt.core.messages import IMAGE_NOTES, ChatMessage

PIXELS = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
NOTE = "[image: receipt.png, 640x480 — a receipt totalling 42.10 EUR]"
REFUSAL = "Invalid content type. image_url is only supported by certain models."


def question_with_image() -> ChatMessage:
    return ChatMessage(
        role="user",
        content=[{"type": "text", "text": "What is the total?"}, PIXELS],
        metadata={IMAGE_NOTES: [NOTE]},
    )


def image_parts(request: dict) -> int:
    """Image parts in the messages of a request the scripted server received."""
    return sum(
        1
        for m in request["messages"]
        if isinstance(m["content"], list)
        for p in m["content"]
        if p.get("type") == "image_url"
    )

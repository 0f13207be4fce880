"""An answer's HTML for a read: the one stored with the message when it was finished.

Rendering is pure Python: a 200 KB answer takes seconds, so a messages-API read must not
render (three long answers read in parallel held every reader and ``/healthz``). The
answer is rendered once when it is finished (``services.assistant_message_finish``); an
answer stored by an older renderer (``chat.rendering.markdown.RENDERER_VERSION``), or never rendered
(a run interrupted by a crash), is rendered on its first read and stored, so the next read
serves it. A running answer's text still grows: it is rendered, not stored.
"""

from __future__ import annotations

from chat.models import Message
from chat.rendering.markdown import RENDERER_VERSION, render_markdown


def answer_html(message: Message) -> str:
    if message.html_version == RENDERER_VERSION:
        return message.html
    html = render_markdown(message.content)
    if message.status != Message.Status.RUNNING:
        # Only if the text is still the one rendered: a finish meanwhile stored its own.
        Message.objects.filter(pk=message.pk, html_version=message.html_version).exclude(
            status=Message.Status.RUNNING
        ).update(html=html, html_version=RENDERER_VERSION)
        message.html, message.html_version = html, RENDERER_VERSION
    return html

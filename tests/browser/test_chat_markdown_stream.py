"""Markdown while an answer streams (RU.6), and an answer a follow-up interrupted (RU.7).

The scripted server holds back the rest of a reply until the test releases it, so what the
page shows "while streaming" is behaviour, not timing: a code fence, bold text and a table
are laid out before the reply ends, raw HTML in the stream is shown as text exactly as the
final render shows it, and when the server's HTML arrives the blocks already laid out stay
the same DOM nodes in the same place (no jump). Desktop and phone.
"""

from __future__ import annotations

import random
import re

import pytest
from playwright.sync_api import expect

from chat.rendering.markdown import render_markdown
from tests.browser.conftest import DESKTOP, PHONE, login, screenshot, send
from tests.support.scripted_server import _pieces, held, text

pytestmark = pytest.mark.browser

XSS = "<img src=x onerror=alert(1)> and <script>alert(2)</script>"
ANSWER = (
    "Here is **the plan** in short.\n\n"
    "```python\ndef double(x):\n    return 2 * x\n```\n\n"
    "| Step | Result |\n|:-----|-------:|\n| one | 5 |\n| two | 10 |\n\n"
    f"Raw markup stays text: {XSS}\n\n"
    "- first point\n- second point\n\n"
    "That is all.  "  # the last piece is a lone space: everything shows before it
)


@pytest.fixture
def live_daphne_env(scripted_server):
    return scripted_server.daphne_env()


@pytest.fixture(params=[DESKTOP, PHONE], ids=["desktop", "phone"])
def page(request, new_page, live_daphne):
    page = new_page(viewport=request.param)
    login(page, live_daphne)
    yield page
    assert not page.errors, f"the page raised: {page.errors}"


def pieces_until(marker: str) -> int:
    """How many streamed pieces of ANSWER come before the one holding ``marker``."""
    pieces = _pieces(ANSWER)
    return next(i for i, p in enumerate(pieces) if marker in p)


def wait_done(page) -> None:
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)
    expect(page.locator("#stop")).to_be_hidden()


def test_an_open_code_fence_and_bold_are_laid_out_while_streaming(page, scripted_server, release):
    # Held in the middle of the code block: its fence is not closed yet.
    scripted_server.enqueue(held(text(ANSWER), release, after=pieces_until("2")))
    send(page, "Show me a plan")
    answer = page.locator(".msg-assistant .answer")
    expect(answer.locator("pre code")).to_contain_text("def double(x):")
    assert not release.is_set()  # the provider is still holding the rest
    expect(answer.locator("strong")).to_have_text("the plan")
    assert "```" not in answer.inner_text() and "**" not in answer.inner_text()
    screenshot(page, f"stream-md-open-fence-{page.viewport_size['width']}")
    release.set()
    wait_done(page)
    expect(answer.locator("pre code")).to_have_text("def double(x):\n    return 2 * x\n")


def test_the_final_render_keeps_the_live_blocks_and_escapes_markup_alike(
    page, scripted_server, release
):
    pieces = _pieces(ANSWER)
    assert pieces[-1] == " "
    scripted_server.enqueue(held(text(ANSWER), release, after=len(pieces) - 1))
    send(page, "Show me a plan")
    answer = page.locator(".msg-assistant .answer")
    # Everything but a trailing space has streamed: the layout is already the final one.
    expect(answer.locator("ul li")).to_have_count(2)
    expect(answer.locator("table tbody tr")).to_have_count(2)
    expect(answer.locator("th.align-right")).to_have_text("Result")
    expect(answer.locator("pre code")).to_have_count(1)
    expect(answer.locator("p").last).to_have_text("That is all.")
    assert not release.is_set()
    live = answer.evaluate(
        """(answer) => {
          const kids = [...answer.children];
          kids.forEach((node, i) => { node.__live = i; });
          const xss = [...answer.querySelectorAll("p")].find((p) => p.innerText.startsWith("Raw"));
          return {
            count: kids.length,
            tags: kids.map((n) => n.tagName),
            height: answer.getBoundingClientRect().height,
            tops: kids.map((n) => n.getBoundingClientRect().top),
            xss: xss.textContent,
            elements: answer.querySelectorAll("img, script").length,
          };
        }"""
    )
    # Raw HTML in the stream is text, never markup (the page's dialog guard fails the test
    # on any alert).
    assert live["xss"] == f"Raw markup stays text: {XSS}"
    assert live["elements"] == 0
    screenshot(page, f"stream-md-before-done-{page.viewport_size['width']}")

    release.set()
    wait_done(page)
    final = answer.evaluate(
        """(answer) => {
          const kids = [...answer.children];
          const xss = [...answer.querySelectorAll("p")].find((p) => p.innerText.startsWith("Raw"));
          return {
            tags: kids.map((n) => n.tagName),
            same: kids.map((n) => n.__live ?? null),
            height: answer.getBoundingClientRect().height,
            tops: kids.map((n) => n.getBoundingClientRect().top),
            xss: xss.textContent,
            elements: answer.querySelectorAll("img, script").length,
            highlighted: answer.querySelectorAll("pre code span[class^=tok-]").length,
          };
        }"""
    )
    assert final["tags"] == live["tags"]
    assert final["xss"] == live["xss"] and final["elements"] == 0
    # The server highlights the code, so that block alone is replaced; every other block is
    # the node that was laid out while streaming.
    assert final["highlighted"] > 0
    code_at = live["tags"].index("DIV")
    assert final["same"] == [None if i == code_at else i for i in range(live["count"])]
    # Nothing moved.
    assert abs(final["height"] - live["height"]) <= 1
    assert all(abs(a - b) <= 1 for a, b in zip(final["tops"], live["tops"], strict=True))
    screenshot(page, f"stream-md-done-{page.viewport_size['width']}")


ESSAY = "\n\n".join(
    f"Paragraph {i} of the essay. " + " ".join(["It goes on, as essays do."] * 9) for i in range(26)
)
REPLY = "In one line: it goes on."


def test_a_follow_up_neither_hides_nor_cuts_the_answer_that_streamed(
    page, scripted_server, live_daphne, release
):
    """A 6,000-character answer is streaming when the user sends a follow-up: it stays in
    the answer (not a collapsed thought), the reply follows it, and Copy, the export and a
    reload hold all of it."""
    assert len(ESSAY) > 6_000
    scripted_server.enqueue(held(text(ESSAY), release, after=40), text(REPLY))
    send(page, "Write an essay")
    answer = page.locator(".msg-assistant .answer")
    expect(answer).to_contain_text("Paragraph 0 of the essay. It goes on")
    send(page, "Now in one line?")
    follow_up = page.locator(".msg-user.injected")
    # Its id comes with ``injected``, which the server sends only once the run has been
    # handed the follow-up (docs/protocol.md): the essay may end now, the run answers it.
    expect(follow_up).to_have_attribute("data-message-id", re.compile(r"^\d+$"))
    release.set()
    wait_done(page)

    last = "Paragraph 25 of the essay."
    expect(answer).to_contain_text(last)
    expect(answer.locator("p").last).to_have_text(REPLY)
    expect(answer.locator("p", has_text="Paragraph 0 of the essay.")).to_be_visible()
    expect(page.locator(".msg-assistant .step-thought")).to_have_count(0)
    screenshot(page, f"follow-up-keeps-answer-{page.viewport_size['width']}")

    page.locator(".msg-assistant").get_by_role("button", name="Copy the answer").click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.strip() == ESSAY + "\n\n" + REPLY

    conversation = re.search(r"/c/([^/]+)/", page.url).group(1)
    exported = page.request.get(
        f"{live_daphne.base_url}/api/conversations/{conversation}/export/?format=markdown"
    ).text()
    assert ESSAY + "\n\n" + REPLY in exported

    page.reload()
    expect(answer).to_contain_text(last)
    expect(answer.locator("p").last).to_have_text(REPLY)
    expect(page.locator(".msg-assistant .step-thought")).to_have_count(0)


SAME_AS_THE_SERVER = [
    "Hello **bold**, *em*, `code`, ~~gone~~ and snake_case_word\nsecond line",
    "# Title\n\n- a\n- b\n  - nested\n\n1. x\n2. y",
    "3. starts at three\n4. four",
    "- loose\n\n- list",
    "| a | b | c |\n|:--|--:|:-:|\n| 1 | **2** | `3` |\n| short |",
    "```\nplain <b>bold</b> & more\n```",
    "    indented code",
    "> a quote\n> on two lines",
    "Title\n=====\n\nSub\n---\n\n***",
    "hard  \nbreak\\\nand soft\nbreak",
    "Entities: &amp; &lt;b&gt; &copy; &#169; &#xA9; &bogus;",
    '[site](https://example.com "Title") [rel](/docs/a?b=1&c=2) <https://auto.link/x> '
    "<me@example.com> ![alt text](https://example.com/i.png)",
    # Hostile input: shown as text or dropped exactly as the server does.
    "<script>alert(1)</script> <img src=x onerror=alert(2)> <a href=javascript:alert(3)>x</a>",
    "[click](javascript:alert(4)) [data](data:text/html,hi) <javascript:alert(5)>",
    "[ftp](ftp://example.com/f) [mail](mailto:a@b.c)",
    '```html\n<script>alert("in code")</script>\n```',
]


def test_the_live_renderer_makes_the_servers_html_for_common_markdown(logged_in_page):
    """Block by block, the Markdown drawn while streaming is the HTML the server sends at
    the end (code highlighting aside), hostile input included; so the final render
    changes nothing in these blocks."""
    for source in SAME_AS_THE_SERVER:
        live, final = logged_in_page.evaluate(
            """async ([source, html]) => {
              const { renderBlocks } = await import("/static/chat/js/markdown_live.js");
              // Newlines next to block tags are the server renderer's layout, not content.
              const tags = "(?:p|ul|ol|li|blockquote|table|thead|tbody|tr|th|td|h[1-6]|hr)";
              const norm = (node) => [...node.childNodes]
                .filter((n) => n.nodeType === 1 || n.textContent.trim())
                .map((n) => (n.nodeType === 1 ? n.outerHTML : n.textContent))
                .join("")
                .replace(new RegExp(`\\n(?=</?${tags}[\\\\s>])`, "g"), "")
                .replace(new RegExp(`(</?${tags}[^>]*>)\\n`, "g"), "$1");
              const box = document.createElement("div");
              box.append(...renderBlocks(source.split("\\n")));
              const template = document.createElement("template");
              template.innerHTML = html;
              return [norm(box), norm(template.content)];
            }""",
            [source, render_markdown(source)],
        )
        if source.startswith("```html"):
            # The server highlights a block with a language: same text, more spans.
            assert live.startswith('<pre><code class="language-html">&lt;script&gt;')
            assert "<script" not in live
            continue
        assert live == final, source


CHUNKED = [
    ANSWER,
    "Intro:\n\n1. one\n\n2. two\n   - nested\n\n3. three\n\n"
    "~~~\nfenced with a blank line\n\n``` not a close\n~~~\n\n> quoted **bold**\n> more\n\nEnd.",
    "```js\nconst a = 1;\n\n\nconst b = `x`;\n```\nText right after the fence.\n\n"
    "| a |\n|---|\n| 1 |",
]


@pytest.mark.parametrize("source", CHUNKED, ids=["answer", "lists-fences", "code"])
def test_any_chunking_gives_the_one_shot_render_and_keeps_completed_blocks(logged_in_page, source):
    """However the stream is cut (inside a fence marker, a `**`, a table row), the answer
    drawn piece by piece ends as the whole text rendered at once, and the first completed
    block is never drawn again while the rest streams in."""
    for seed in range(12):
        rng = random.Random(seed)
        cuts = sorted(rng.sample(range(1, len(source)), min(40, len(source) - 1)))
        live, whole, kept = logged_in_page.evaluate(
            """async ([source, cuts]) => {
              const { StreamRender } = await import("/static/chat/js/stream_render.js");
              const { renderBlocks } = await import("/static/chat/js/markdown_live.js");
              const root = document.createElement("div");
              const live = new StreamRender(root);
              let first = null;
              for (const cut of cuts) {
                live.update(source.slice(0, cut));
                live.render(); // the frame, without waiting for it
                if (!first && live.doneEnd > 0) first = root.firstElementChild;
              }
              live.update(source);
              live.settle();
              const whole = document.createElement("div");
              whole.append(...renderBlocks(source.split("\\n")));
              return [root.innerHTML, whole.innerHTML, first === root.firstElementChild];
            }""",
            [source, cuts],
        )
        assert live == whole, (seed, cuts)
        assert kept, (seed, cuts)

"""A code block shows the language its fence names ("python") beside its Copy button, as
text whatever the info string holds, live and after a reload, on a desktop and a touch
phone; Copy copies that block only."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot, wait_ready
from tests.browser.layout_audit import layout_problems
from tests.browser.sessions import open_session
from tests.support.scripted_server import text

pytestmark = pytest.mark.browser

PYTHON = "def area(r):\n    return 3.14159 * r * r\n\nprint(area(2))"
ANSWER = (
    "Here it is:\n\n"
    f"```python\n{PYTHON}\n```\n\n"
    "A shell line:\n\n"
    "```c++ extra words\nint x = 1;\n```\n\n"
    "A fence with markup for a language:\n\n"
    '```<img src=x onerror="document.title=1">\nstill code\n```\n\n'
    "And none:\n\n```\nplain\n```\n"
)


@pytest.fixture
def live_daphne_env(scripted_server):
    return scripted_server.daphne_env()


def labels(page) -> list[str]:
    return page.locator(".answer .code-block").evaluate_all(
        "blocks => blocks.map(b => { const l = b.querySelector('.code-lang');"
        " return l.hidden ? '' : l.textContent; })"
    )


@pytest.mark.parametrize("phone", [False, True], ids=["desktop", "phone"])
def test_each_code_block_names_its_language_beside_copy(
    chromium, live_daphne, scripted_server, phone
):
    session = open_session(chromium, live_daphne, phone=phone)
    page = session.page
    try:
        scripted_server.enqueue(text(ANSWER))
        page.locator("#prompt").fill("Show me some code")
        page.locator("#prompt").press("Enter")
        expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)
        expect(page.locator(".answer .code-block")).to_have_count(4)
        expected = ["python", "c++", "", ""]
        assert labels(page) == expected
        # The label sits in the block's bar, on the Copy button's line.
        first = page.locator(".answer .code-block").first
        label_box = first.locator(".code-lang").bounding_box()
        copy_box = first.locator(".code-copy").bounding_box()
        assert label_box["x"] < copy_box["x"]
        assert (
            abs(
                (label_box["y"] + label_box["height"] / 2)
                - (copy_box["y"] + copy_box["height"] / 2)
            )
            < 4
        )
        # The markup in the third fence made no element and ran nothing.
        assert page.locator(".answer img").count() == 0
        assert page.title() != "1"
        first.locator(".code-copy").click()
        assert page.evaluate("navigator.clipboard.readText()") == PYTHON
        problems = layout_problems(page, touch=phone)
        assert not problems, problems
        screenshot(page, f"code-blocks-{'phone' if phone else 'desktop'}")

        page.reload()
        wait_ready(page)
        expect(page.locator(".answer .code-block")).to_have_count(4)
        assert labels(page) == expected
        assert not session.errors
    finally:
        session.close()

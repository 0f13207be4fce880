"""Page layout in German, where labels run longest: the offline note leaves the message
list alone, the model picker shows its whole label on a desktop, and a phone keeps the
title and every button on the screen.

Screenshots go to test-output/screenshots/layout-*.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from tests.browser.conftest import DESKTOP, PHONE, TIMEOUT_MS, screenshot, send
from tests.browser.test_i18n import login_in_page_language, wait_done
from tests.browser.word_breaks import broken_words

pytestmark = pytest.mark.browser

LANDSCAPE_PHONE = {"width": 844, "height": 390}
LAPTOP = {"width": 1024, "height": 768}

# The note ends above the message list with a gap (a list scrolled down is clipped at its
# top edge: flush against the note, the clipped messages look as if the note covered them),
# the list keeps at least the note's height, and the first message (the list scrolled to
# its top) starts below the note.
NOTE_CLEARS_THE_LIST = """() => {
  const note = document.getElementById('offline-note').getBoundingClientRect();
  const list = document.getElementById('messages');
  const box = list.getBoundingClientRect();
  const first = list.querySelector('.msg').getBoundingClientRect();
  return note.height > 0 && box.top - note.bottom >= 4 && note.bottom <= first.top
    && box.height >= note.height;
}"""

FIGURES = """() => {
  const r = (el) => el.getBoundingClientRect().toJSON();
  const list = document.getElementById('messages');
  return {note: r(document.getElementById('offline-note')), list: r(list),
          first: r(list.querySelector('.msg'))};
}"""

# What the picker's label needs: the same select, unconstrained, measured off-screen.
PICKER_WIDTHS = """(select) => {
  const probe = select.cloneNode(true);
  Object.assign(probe.style, {maxWidth: 'none', width: 'auto', position: 'absolute',
                              visibility: 'hidden'});
  select.parentElement.append(probe);
  const needed = probe.getBoundingClientRect().width;
  probe.remove();
  return {needed, shown: select.getBoundingClientRect().width};
}"""


@pytest.fixture
def german_page(chromium, live_daphne):
    """A German browser, logged in, with one answered question (the offline model)."""
    contexts = []

    def make(viewport):
        context = chromium.new_context(viewport=viewport, locale="de-DE")
        context.set_default_timeout(TIMEOUT_MS)
        contexts.append(context)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.errors = errors
        login_in_page_language(page, live_daphne, submit="Anmelden")
        send(page, "Was ist 12*7?")
        wait_done(page, 1)
        return page

    yield make
    for context in contexts:
        context.close()


@pytest.mark.parametrize(
    "viewport", [DESKTOP, PHONE, LANDSCAPE_PHONE], ids=["desktop", "phone", "landscape"]
)
def test_the_offline_note_does_not_cover_the_message_list(german_page, viewport):
    page = german_page(viewport)
    note = page.locator("#offline-note")
    first = page.locator("#messages .msg").first
    expect(note).to_be_visible()
    expect(first).to_be_visible()
    page.locator("#messages").evaluate("list => { list.scrollTop = 0; }")
    expect(first).to_be_in_viewport()
    name = f"layout-offline-note-{viewport['width']}x{viewport['height']}"
    try:
        page.wait_for_function(NOTE_CLEARS_THE_LIST, timeout=10_000)
    except PlaywrightTimeout:
        screenshot(page, name)
        pytest.fail(f"the offline note covers or crowds out the messages: {page.evaluate(FIGURES)}")
    screenshot(page, name)
    assert not page.errors


@pytest.mark.parametrize("viewport", [DESKTOP, LAPTOP], ids=["desktop", "laptop"])
def test_the_german_model_picker_label_is_whole_on_a_desktop(german_page, viewport):
    page = german_page(viewport)
    picker = page.locator("#model-picker")
    expect(picker).to_be_visible()
    expect(picker.locator("option").first).to_have_text("Standard: fimone-offline (offline)")
    expect(page.locator("#gauge")).to_be_visible()  # the top bar is complete
    page.evaluate("document.fonts.ready")
    widths = picker.evaluate(PICKER_WIDTHS)
    screenshot(page, f"layout-model-picker-de-{viewport['width']}x{viewport['height']}")
    assert widths["shown"] >= widths["needed"], widths
    # The rest of the top bar still fits beside it.
    gauge = page.locator("#gauge").bounding_box()
    assert gauge["x"] + gauge["width"] <= viewport["width"], gauge
    assert not page.errors


@pytest.mark.parametrize("viewport", [PHONE, {"width": 360, "height": 640}], ids=["390", "360"])
def test_the_top_bar_fits_a_phone_in_german(german_page, viewport):
    page = german_page(viewport)
    gauge = page.locator("#gauge")
    expect(gauge).to_be_visible()
    expect(page.locator("#gauge-text")).to_have_text(re.compile(r"/ 60\.0k$"))
    screenshot(page, f"layout-top-bar-de-{viewport['width']}x{viewport['height']}")
    for part in ("#sidebar-toggle", "#model-picker", "#gauge"):
        box = page.locator(part).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"], (part, box)
    # The picker's label is whole: it says "(offline)" itself, so the badge gives it its room.
    expect(page.locator(".badge-offline")).to_be_hidden()
    page.evaluate("document.fonts.ready")
    widths = page.locator("#model-picker").evaluate(PICKER_WIDTHS)
    assert widths["shown"] >= widths["needed"], widths
    # The title keeps a readable width, and every button under the answer is on the screen.
    title = page.locator("#conversation-title").bounding_box()
    assert title["width"] >= viewport["width"] * 0.5, title
    actions = page.locator(".msg-assistant .msg-actions").last.locator("button")
    expect(actions.last).to_be_visible()
    for box in (b.bounding_box() for b in actions.all()):
        assert box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"], box
    assert not page.errors


@pytest.mark.parametrize("touch", [False, True], ids=["mouse", "touch"])
def test_ru13_a_phone_keeps_the_header_compact_with_new_chat_in_sight(chromium, live_daphne, touch):
    """RU.13: on a phone the title, the picker's row and the offline note leave the
    conversation most of the screen (they took 22 %), and New chat is in the top bar."""
    options = {"viewport": PHONE, "locale": "de-DE"}
    if touch:
        options |= {"has_touch": True, "is_mobile": True}
    context = chromium.new_context(**options)
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        login_in_page_language(page, live_daphne, submit="Anmelden")
        # German words are long: they wrap whole, or hyphenated, never cut.
        expect(page.locator(".suggestion").first).to_be_visible()
        assert broken_words(page, "body") == []
        send(page, "Was ist 12*7?")
        wait_done(page, 1)
        expect(page.locator("#offline-note")).to_be_visible()
        furniture = page.evaluate(
            "document.getElementById('offline-note').getBoundingClientRect().bottom"
        )
        share = furniture / PHONE["height"]
        screenshot(page, f"layout-phone-header-{'touch' if touch else 'mouse'}")
        assert share <= (0.19 if touch else 0.15), f"the header takes {share:.0%} of the screen"
        new_chat = page.locator(".topbar").get_by_role("button", name="Neuer Chat")
        expect(new_chat).to_be_visible()
        new_chat.click()
        expect(page.locator("#conversation-title")).to_have_text("Neuer Chat")
        expect(page.locator("#messages .msg")).to_have_count(0)
    finally:
        context.close()

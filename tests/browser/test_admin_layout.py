"""The model-configuration admin as a staff user sees it, light and dark."""

from __future__ import annotations

import pytest
from django.utils import translation
from playwright.sync_api import expect

from tests.browser.conftest import DESKTOP, login, screenshot
from tests.browser.sessions import DJANGO_LANGUAGES, open_session
from tests.browser.word_breaks import broken_words

# Makes its user staff and adds model configurations, which every user of a server sees:
# the module's tests share a server, each with a user of its own.
pytestmark = [pytest.mark.browser, pytest.mark.module_server]

MAKE_STAFF_AND_MODELS = """
from django.contrib.auth import get_user_model
from contextmgmt.models import ModelConfig
get_user_model().objects.filter(username={username!r}).update(is_staff=True, is_superuser=True)
ModelConfig.objects.get_or_create(name="GPT-4o with a long display name", defaults=dict(
    model="gpt-4o-2024-08-06", role="main", is_active=True, context_size=128000,
    max_output_tokens=16000, token_ratio=1.25, token_ratio_samples=40))
ModelConfig.objects.get_or_create(name="Fast helper model", defaults=dict(
    model="qwen2.5-14b-instruct-awq", role="fast", context_size=32768, max_output_tokens=8192))
"""


def assert_model_list_fits(page, server) -> None:
    """Open the model list: it is no wider than the window, and the admin's own box around
    a too-wide table (which scrolls it) does not need to scroll."""
    page.goto(server.base_url + "/admin/contextmgmt/modelconfig/")
    expect(page.locator("#result_list")).to_be_visible()
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"the list is {overflow}px wider than a 1280px window"
    hidden = page.evaluate(
        "(() => { const box = document.querySelector('#changelist .results');"
        " return box.scrollWidth - box.clientWidth; })()"
    )
    assert hidden <= 0, f"{hidden}px of the list are scrolled out of sight"


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_model_configs_list_fits_1280_px_and_a_failed_save_reads_consistently(
    new_page, live_daphne, scheme
):
    live_daphne.manage_shell(MAKE_STAFF_AND_MODELS.format(username=live_daphne.username))
    page = new_page(viewport=DESKTOP, color_scheme=scheme)
    login(page, live_daphne)

    assert_model_list_fits(page, live_daphne)
    screenshot(page, f"admin-model-configs-1280-{scheme}")

    page.goto(live_daphne.base_url + "/admin/")
    expect(page.get_by_role("link", name="Context summaries")).to_be_visible()
    expect(page.locator("body")).not_to_contain_text("summarys")

    page.goto(live_daphne.base_url + "/admin/contextmgmt/modelconfig/")
    page.get_by_role("link", name="Fast helper model").click()
    expect(page.locator("body")).to_contain_text("Token budget")
    expect(page.locator("body")).not_to_contain_text("SPEC")
    page.get_by_label("Context size").fill("8000")
    page.get_by_label("Max output tokens").fill("2000")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".errorlist")).to_contain_text("Leaves 2,000 input tokens")
    usable = page.locator(".field-usable_budget .readonly")
    expect(usable).to_have_text("not computed: fix the token fields")
    screenshot(page, f"admin-failed-save-{scheme}")


ROLE_CELLS = "#result_list tbody td.field-role_name"
WINDOW_CELLS = "#result_list tbody td.field-window"


@pytest.mark.parametrize("language", ["en", "de", "zh"])
def test_the_model_list_speaks_the_language_and_fits_1280_px(chromium, live_daphne, language):
    """German admin: the list fits 1,280 px, numbers are German numbers ("128.000"), the
    role column shows a word of the language, not the code "main"."""
    live_daphne.manage_shell(MAKE_STAFF_AND_MODELS.format(username=live_daphne.username))
    session = open_session(chromium, live_daphne, language=language)
    page = session.page
    try:
        assert_model_list_fits(page, live_daphne)
        with translation.override(DJANGO_LANGUAGES[language]):
            roles = {translation.pgettext("model role, short", w) for w in ("Main", "Fast")}
        # German groups with dots; English and Chinese with commas (in Chinese as the
        # chat's Intl.NumberFormat writes them, not run together as Django's formats do).
        windows = (
            {"128.000 / 16.000", "32.768 / 8.192"}
            if language == "de"
            else {"128,000 / 16,000", "32,768 / 8,192"}
        )
        shown_roles = {t.strip() for t in page.locator(ROLE_CELLS).all_inner_texts()}
        assert shown_roles == roles
        assert not shown_roles & {"main", "fast"}
        assert {t.strip() for t in page.locator(WINDOW_CELLS).all_inner_texts()} == windows
        screenshot(page, f"admin-model-configs-1280-{language}")
        assert not session.errors
    finally:
        session.close()


MAKE_A_ROW_IN_EVERY_LIST = """
from chat.models import Attachment, ContextSummary, Conversation, Message, Project
from chat.models.tool_servers import ToolServer
from django.contrib.auth import get_user_model
owner = get_user_model().objects.get(username={username!r})
project = Project.objects.create(owner=owner, name="Alpine expeditions and their logistics",
    instructions="Answer in metres.")
conversation = Conversation.objects.create(owner=owner, title="Planning the Mont Blanc trip",
    project=project)
asked = Message.objects.create(conversation=conversation, role="user", content="How high is it?")
ContextSummary.objects.create(conversation=conversation, content="The user plans a trip.",
    covered_count=12, tokens=840, covers_through=asked)
Attachment.objects.create(owner=owner, conversation=conversation, message=asked,
    file="attachments/summit-route-from-the-gouter-hut.png", original_name="summit-route.png",
    mime_type="image/png", size=482133, width=1920, height=1080, sha256="0" * 64)
Attachment.objects.create(owner=owner, project=project,
    file="attachments/huts-and-their-opening-times.png", original_name="huts.png",
    mime_type="image/png", size=96120, width=800, height=600, sha256="1" * 64)
ToolServer.objects.get_or_create(name="weather-and-tides", defaults=dict(source="admin",
    transport="http", url="https://tools.example.org/mcp/weather-and-tides"))
"""
EVERY_LIST = (
    "/admin/chat/conversation/",
    "/admin/chat/message/",
    "/admin/chat/attachment/",
    "/admin/chat/contextsummary/",
    "/admin/chat/toolserver/",
    "/admin/chat/project/",
    "/admin/contextmgmt/modelconfig/",
)
# How far a change list reaches past its scrolling box or past the window's right edge.
LIST_OVERFLOW = (
    "(() => { const box = document.querySelector('#changelist .results');"
    " const table = document.querySelector('#result_list');"
    " return Math.max(box.scrollWidth - box.clientWidth,"
    " table.getBoundingClientRect().right - document.documentElement.clientWidth); })()"
)
# Labels the admin draws in narrow boxes: the sidebar, the dashboard, filters, headers.
ADMIN_LABELS = (
    "#nav-sidebar, #content-main .module caption, #content-main .module th,"
    " #changelist-filter, #changelist table thead th"
)


@pytest.mark.parametrize("language", ["en", "de", "zh"])
def test_ru13_every_admin_list_fits_1280_px_and_no_label_breaks_mid_word(
    chromium, live_daphne, language
):
    """RU.13: every change list shows its last column whole at 1,280 px, and the admin's
    labels ("Modellkonfigurationen") wrap between words, not inside one."""
    live_daphne.manage_shell(MAKE_STAFF_AND_MODELS.format(username=live_daphne.username))
    live_daphne.manage_shell(MAKE_A_ROW_IN_EVERY_LIST.format(username=live_daphne.username))
    session = open_session(chromium, live_daphne, language=language)
    page = session.page
    try:
        page.goto(live_daphne.base_url + "/admin/")
        assert broken_words(page, ADMIN_LABELS) == []
        out_of_sight = {}
        for path in EVERY_LIST:
            page.goto(live_daphne.base_url + path)
            expect(page.locator("#result_list")).to_be_visible()
            assert broken_words(page, ADMIN_LABELS) == [], path
            overflow = page.evaluate(LIST_OVERFLOW)
            if overflow > 0:
                out_of_sight[path] = overflow
        assert not out_of_sight, f"px of each list out of sight at 1280 px: {out_of_sight}"
        screenshot(page, f"admin-tool-servers-1280-{language}")
        assert not session.errors
    finally:
        session.close()


def test_ru13_the_admin_and_the_chat_have_an_icon(new_page, live_daphne):
    """RU.13: ``/favicon.ico`` is an icon (browsers ask for it by themselves), and the
    pages link it."""
    live_daphne.manage_shell(MAKE_STAFF_AND_MODELS.format(username=live_daphne.username))
    page = new_page(viewport=DESKTOP)
    response = page.request.get(live_daphne.base_url + "/favicon.ico")
    assert response.status == 200
    assert response.headers["content-type"] == "image/x-icon"
    assert response.body()[:4] == b"\x00\x00\x01\x00"  # an ICO file's header
    login(page, live_daphne)
    for path in ("/", "/admin/"):
        page.goto(live_daphne.base_url + path)
        icons = page.locator("link[rel=icon]")
        hrefs = [icons.nth(i).get_attribute("href") for i in range(icons.count())]
        assert "/favicon.ico" in hrefs, (path, hrefs)

"""Projects in the chat (RJ.4): the sidebar's groups, the project panel (name, instructions
against their limit, files, default model), a chat started in a project and answered by the
offline model, a chat's own instructions and its move out of the project from the top bar,
and deleting the project while keeping its conversations; the API's refusals are shown in
the panel with nothing typed lost. The panel on a phone and in German and Chinese fits the
screen (nothing clipped, 44 px targets)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot, send
from tests.browser.layout_audit import layout_problems
from tests.browser.sessions import js_gettext, open_session, open_sidebar
from tests.support import documents

pytestmark = pytest.mark.browser

INSTRUCTIONS_LIMIT = 8_000


def wait_sidebar_slid_out(page) -> None:
    """Until the phone's drawer has ended its slide out of the screen."""
    page.wait_for_function(
        """() => {
          const sidebar = document.getElementById("sidebar");
          return sidebar.getAnimations().length === 0
            && sidebar.getBoundingClientRect().right <= 8;
        }"""
    )


def api_get(page, path: str) -> dict:
    response = page.request.get(page.evaluate("location.origin") + path)
    assert response.ok, response.status
    return response.json()


def project_row(page, name: str):
    return page.locator("#project-list .project-item").filter(
        has=page.locator(".project-name", has_text=name)
    )


def create_project(page, name: str, instructions: str = "") -> None:
    page.locator("#new-project").click()
    dialog = page.locator("dialog.project-dialog")
    expect(dialog).to_be_visible()
    dialog.locator("#project-name").fill(name)
    if instructions:
        dialog.locator("#project-instructions").fill(instructions)
    dialog.locator("#project-save").click()
    # Created: the panel becomes the project's own, where files can be added.
    expect(dialog.locator("#project-upload")).to_be_visible()


def test_a_project_from_its_creation_to_its_deletion(logged_in_page, tmp_path):
    """RJ.4: create a project with instructions and files, chat in it, edit the chat's own
    instructions, move the chat out, delete the project keeping its conversations."""
    page = logged_in_page
    create_project(page, "Lisbon trip", "Answer briefly.")
    dialog = page.locator("dialog.project-dialog")
    expect(project_row(page, "Lisbon trip")).to_have_count(1)

    # Instructions past the server's limit: the API's refusal is shown, the text stays.
    too_long = "x" * (INSTRUCTIONS_LIMIT + 5)
    dialog.locator("#project-instructions").fill(too_long)
    expect(dialog.locator("#project-instructions-count")).to_have_class(re.compile(r"\bover\b"))
    dialog.locator("#project-save").click()
    expect(dialog.locator("#project-error")).to_contain_text("longer than 8,000 characters")
    expect(dialog.locator("#project-instructions")).to_have_value(too_long)
    dialog.locator("#project-instructions").fill("Answer briefly. Mention the hotel.")
    # Files: a text file and a Word document, listed with their size (and pages).
    notes = tmp_path / "notes.txt"
    notes.write_text("The hotel is the Casa do Rio, booked for three nights.\n")
    report = tmp_path / "itinerary.docx"
    report.write_bytes(documents.docx_bytes(["Day one: Alfama.", "Day two: Belém."]))
    dialog.locator("#project-file-input").set_input_files([str(notes), str(report)])
    files = dialog.locator(".project-file")
    expect(files).to_have_count(2)
    expect(files.nth(0).locator(".doc-name")).to_have_text("notes.txt")
    expect(files.nth(0).locator(".doc-meta")).to_contain_text("B")
    expect(files.nth(1).locator(".doc-name")).to_have_text("itinerary.docx")
    # What the server refuses or the browser can tell is wrong is said beside the files.
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(documents.malformed_pdf())
    program = tmp_path / "setup.exe"
    program.write_bytes(b"MZ\x90\x00")
    dialog.locator("#project-file-input").set_input_files([str(broken), str(program)])
    error = dialog.locator("#project-file-error")
    expect(error).to_contain_text("broken.pdf was not added")
    expect(error).to_contain_text("setup.exe is not a supported image or document.")
    expect(files).to_have_count(2)
    # Remove one file again.
    files.nth(1).get_by_role("button", name="Remove itinerary.docx").click()
    expect(files).to_have_count(1)
    screenshot(page, "projects-01-panel")
    exported = api_get(page, dialog.locator("#project-export").get_attribute("href"))
    assert exported["format"] == "fimone.project/1"
    dialog.locator("#project-save").click()
    expect(dialog).to_have_count(0)

    project = api_get(page, "/api/projects/")["projects"][0]
    assert project["instructions"] == "Answer briefly. Mention the hotel."
    listed = api_get(page, f"/api/projects/{project['id']}/files/")["files"]
    assert [f["name"] for f in listed] == ["notes.txt"]

    # A chat started in the project: it says so in the top bar, and is listed under it.
    row = project_row(page, "Lisbon trip")
    if row.locator(".project-toggle").get_attribute("aria-expanded") != "true":
        row.locator(".project-toggle").click()
    row.get_by_role("button", name="New chat in this project").click()
    expect(page.locator("#conversation-project")).to_have_text("Lisbon trip")
    send(page, "Where do we stay?")
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)
    expect(row.locator(".project-conversations .conv-item")).to_have_count(1)
    expect(page.locator("#conversation-list .conv-item")).to_have_count(0)
    conversation_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    assert api_get(page, f"/api/conversations/{conversation_id}/")["project"] == project["id"]

    # The chat's own instructions, from the top bar.
    page.locator("#conversation-settings").click()
    chat = page.locator("dialog.conversation-dialog")
    expect(chat).to_be_visible()
    expect(chat.locator("#conversation-project-select")).to_have_value(str(project["id"]))
    chat.locator("#conversation-instructions").fill("Sign off with “Boa viagem”.")
    chat.locator("#conversation-settings-save").click()
    expect(chat).to_have_count(0)
    saved = api_get(page, f"/api/conversations/{conversation_id}/")
    assert saved["instructions"] == "Sign off with “Boa viagem”."
    expect(page.locator("#conversation-settings")).to_have_class(
        re.compile(r"\bhas-instructions\b")
    )

    # Moved out of the project: listed by date again, the top bar names no project.
    page.locator("#conversation-settings").click()
    chat.locator("#conversation-project-select").select_option("")
    chat.locator("#conversation-settings-save").click()
    expect(chat).to_have_count(0)
    expect(page.locator("#conversation-project")).to_be_hidden()
    expect(page.locator("#conversation-list .conv-item")).to_have_count(1)
    expect(row.locator(".project-conversations .conv-item")).to_have_count(0)
    assert api_get(page, f"/api/conversations/{conversation_id}/")["project"] is None

    # Back in, then the project deleted, its conversations kept (moved out).
    page.locator("#conversation-settings").click()
    chat.locator("#conversation-project-select").select_option(str(project["id"]))
    chat.locator("#conversation-settings-save").click()
    expect(row.locator(".project-conversations .conv-item")).to_have_count(1)
    row.locator(".project-settings").click()
    page.locator("#project-delete").click()
    confirm = page.locator("dialog.project-delete-dialog")
    expect(confirm.locator('input[value="keep"]')).to_be_checked()
    screenshot(page, "projects-02-delete")
    confirm.locator("#project-delete-confirm").click()
    expect(page.locator("#project-list .project-item")).to_have_count(0)
    expect(page.locator("dialog")).to_have_count(0)
    expect(page.locator("#conversation-list .conv-item")).to_have_count(1)
    expect(page.locator(".msg-assistant")).to_have_count(1)  # still on screen
    expect(page.locator("#conversation-project")).to_be_hidden()
    assert api_get(page, "/api/projects/")["projects"] == []
    assert api_get(page, f"/api/conversations/{conversation_id}/")["project"] is None


def test_deleting_a_project_with_its_conversations_leaves_a_new_chat(logged_in_page):
    """RJ.4: "Delete them too" deletes the project's conversations with it."""
    page = logged_in_page
    create_project(page, "Scratch")
    page.locator("dialog.project-dialog").get_by_role("button", name="Close").click()
    project_row(page, "Scratch").get_by_role("button", name="New chat in this project").click()
    send(page, "What is 2+2?")
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)
    project_row(page, "Scratch").locator(".project-settings").click()
    page.locator("#project-delete").click()
    confirm = page.locator("dialog.project-delete-dialog")
    confirm.get_by_text("Delete them too").click()
    confirm.locator("#project-delete-confirm").click()
    expect(page.locator("#project-list .project-item")).to_have_count(0)
    expect(page.locator("#conversation-title")).to_have_text("New chat")
    expect(page.locator(".conv-item")).to_have_count(0)
    assert api_get(page, "/api/conversations/")["conversations"] == []


@pytest.mark.parametrize(
    ("language", "phone"), [("en", True), ("de", True), ("zh", True), ("de", False), ("zh", False)]
)
def test_the_project_panel_fits_and_speaks_the_language(chromium, live_daphne, language, phone):
    """RJ.4, RU.9: the sidebar's projects, the project panel (with instructions past the
    limit) and a chat's settings, in the user's language, on a touch phone and a desktop:
    nothing wider than the screen, no clipped label, 44 px targets."""
    session = open_session(chromium, live_daphne, language=language, phone=phone)
    page = session.page
    name = f"projects-{language}-{'phone' if phone else 'desktop'}"
    found: dict[str, list[str]] = {}

    def check(state: str) -> None:
        problems = layout_problems(page, touch=phone)
        if problems:
            found[state] = problems
            screenshot(page, f"{name}-{state.replace(' ', '-')}")

    try:
        open_sidebar(session)
        page.locator("#new-project").click()
        if phone:
            wait_sidebar_slid_out(page)
        dialog = page.locator("dialog.project-dialog")
        expect(dialog.locator("#project-dialog-title")).to_have_text(
            js_gettext(language, "New project")
        )
        dialog.locator("#project-name").fill("Ein Projekt mit einem ziemlich langen Namen")
        dialog.locator("#project-instructions").fill("y" * (INSTRUCTIONS_LIMIT + 1))
        check("new project, instructions too long")
        dialog.locator("#project-instructions").fill("Kurz.")
        dialog.locator("#project-save").click()
        expect(dialog.locator("#project-dialog-title")).to_have_text(
            js_gettext(language, "Project settings")
        )
        check("project settings")
        screenshot(page, f"{name}-panel")
        page.locator("#project-delete").click()
        expect(page.locator("dialog.project-delete-dialog")).to_be_visible()
        check("delete project")
        page.keyboard.press("Escape")
        dialog.get_by_role("button", name=js_gettext(language, "Close")).click()
        expect(dialog).to_have_count(0)
        open_sidebar(session)
        row = page.locator("#project-list .project-item")
        expect(row).to_have_count(1)
        if row.locator(".project-toggle").get_attribute("aria-expanded") != "true":
            row.locator(".project-toggle").click()
        check("sidebar with a project")
        screenshot(page, f"{name}-sidebar")
        row.locator(".project-new-chat").click()
        if phone:
            wait_sidebar_slid_out(page)
        expect(page.locator("#conversation-project")).to_have_text(
            "Ein Projekt mit einem ziemlich langen Namen"
        )
        check("new chat in the project")
        page.locator("#conversation-settings").click()
        expect(page.locator("dialog.conversation-dialog")).to_be_visible()
        check("chat settings")
        screenshot(page, f"{name}-chat-settings")
        assert not found, "\n".join(f"{s}:\n  " + "\n  ".join(p) for s, p in found.items())
        assert not session.errors
    finally:
        session.close()


def test_a_file_stored_before_the_panel_read_its_list_is_listed_once(logged_in_page, tmp_path):
    """RJ.4: the panel's first read of the files can arrive after an upload was stored and
    before the upload's answer: the file is still listed once."""
    page = logged_in_page
    held = []

    def hold(route):
        held.append(route)

    page.route(re.compile(r"/api/projects/\d+/files/$"), hold)
    create_project(page, "Reading list")
    dialog = page.locator("dialog.project-dialog")
    notes = tmp_path / "notes.txt"
    notes.write_text("Chapter one.\n")
    with page.expect_request(lambda r: r.method == "POST" and "/files/" in r.url):
        dialog.locator("#project-file-input").set_input_files(str(notes))
    expect(dialog.locator("[role=status]")).to_contain_text("Uploading notes.txt")
    listing = next(r for r in held if r.request.method == "GET")
    upload = next(r for r in held if r.request.method == "POST")
    # The server stores the file (sent as the page sent it: Playwright's replay of a
    # route drops a multipart body); the page has no answer yet.
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    stored = page.request.post(
        upload.request.url,
        multipart={"file": {"name": "notes.txt", "mimeType": "text/plain", "buffer": b"One.\n"}},
        headers={"X-CSRFToken": token, "Referer": page.url},
    )
    assert stored.status == 201, (stored.status, stored.text())
    listing.continue_()  # the listing read after it: it names the file
    expect(dialog.locator(".project-file")).to_have_count(1)
    upload.fulfill(response=stored)
    expect(dialog.locator("[role=status]")).to_have_text("")
    expect(dialog.locator(".project-file")).to_have_count(1)


def test_a_file_past_the_projects_limit_is_refused_in_the_panel_with_nothing_lost(
    chromium, shared_daphne_factory, tmp_path
):
    """RJ.4: on a server that lets a project hold two files, three chosen at once: two are
    added, the third is refused with the server's reason in the user's language (German
    here), and the panel keeps the files and the instructions being typed."""
    server = shared_daphne_factory({"FIMONE_PROJECT_MAX_FILES": "2"})
    session = open_session(chromium, server, language="de")
    page = session.page
    try:
        create_project(page, "Depots", "Kurz antworten.")
        dialog = page.locator("dialog.project-dialog")
        dialog.locator("#project-instructions").fill("Kurz antworten. Noch nicht gespeichert.")
        chosen = []
        for name in ("a.txt", "b.txt", "c.txt"):
            path = tmp_path / name
            path.write_text(f"Datei {name}.\n")
            chosen.append(str(path))
        dialog.locator("#project-file-input").set_input_files(chosen)
        error = dialog.locator("#project-file-error")
        expect(error).to_contain_text("c.txt")
        expect(error).to_contain_text("höchstens 2 Dateien")
        files = dialog.locator(".project-file .doc-name")
        expect(files).to_have_text(["a.txt", "b.txt"])
        expect(dialog.locator("#project-instructions")).to_have_value(
            "Kurz antworten. Noch nicht gespeichert."
        )
        dialog.locator(".project-file").nth(0).locator("button").click()
        expect(files).to_have_text(["b.txt"])
        dialog.locator("#project-file-input").set_input_files(chosen[2])
        expect(files).to_have_text(["b.txt", "c.txt"])
        expect(error).to_be_hidden()
        assert not session.errors
    finally:
        session.close()

"""The main states of the chat as PNGs in docs/screenshots/, desktop and phone, light and dark.

Starts its own daphne with the offline model on a fresh data folder, drives Debian's
Chromium (/usr/bin/chromium) with Playwright and writes
``docs/screenshots/<state>-<desktop|phone>-<light|dark>.png``. Run it after a visible
change and commit the PNGs (docs/ui.md links them): ``bin/screenshots [--out DIR]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import expect, sync_playwright  # noqa: E402

from tests.support.live_server import live_server  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
SCREENS = {
    "desktop": {"viewport": {"width": 1280, "height": 800}},
    "phone": {
        "viewport": {"width": 390, "height": 844},
        "has_touch": True,
        "is_mobile": True,
        "device_scale_factor": 1,
    },
}
TOOLS_QUESTION = "What time is it, and what is 17 * 23?"
DAG_QUESTION = "First compute 2+3, then double the result"
PROJECT_INSTRUCTIONS = "Answer briefly. We travel in May, two adults, by train."
PROJECT_FILE = {
    "name": "hotel-notes.txt",
    "mimeType": "text/plain",
    "buffer": b"Casa do Rio, Lisbon: three nights from 12 May, breakfast included.\n",
}
TIMEOUT_MS = 60_000


def wait_answered(page, count: int) -> None:
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(count)
    expect(page.locator("#stop")).to_be_hidden()


def ask(page, question: str, count: int, *, mode: str = "react") -> None:
    page.locator("label[for=mode-dag]" if mode == "dag" else "label[for=mode-react]").click()
    page.locator("#prompt").fill(question)
    page.locator("#prompt").press("Enter")
    wait_answered(page, count)


def shoot(browser, server, out: Path, screen: str, scheme: str) -> list[Path]:
    context = browser.new_context(color_scheme=scheme, locale="en-US", **SCREENS[screen])
    context.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)
    page = context.new_page()
    written: list[Path] = []

    def save(state: str) -> None:
        page.wait_for_timeout(350)  # transitions (the drawer, the gauge) settle
        path = out / f"{state}-{screen}-{scheme}.png"
        page.screenshot(path=str(path))
        written.append(path)

    page.goto(server.base_url + "/")
    save("login")
    page.locator("#id_username").fill(server.username)
    page.locator("#id_password").fill(server.password)
    page.locator("#id_password").press("Enter")
    page.locator("html[data-app=ready]").wait_for(state="attached")
    if page.locator("#offline-note-close").is_visible():
        page.locator("#offline-note-close").click()
    save("empty-chat")
    ask(page, TOOLS_QUESTION, 1)
    page.locator(".msg-assistant .step").first.locator("summary").click()
    save("answer-with-tools")
    page.locator("#gauge").click()
    expect(page.locator("#gauge-detail")).to_be_visible()
    save("context-gauge")
    page.keyboard.press("Escape")
    if screen == "phone":
        page.locator("#sidebar-toggle").click()
        page.wait_for_timeout(300)  # the drawer's slide
    page.locator("#new-conversation").click()
    ask(page, DAG_QUESTION, 1, mode="dag")
    save("dag-plan")
    # A project: its panel with instructions and a file, then a chat in it, listed under it.
    if screen == "phone":
        page.locator("#sidebar-toggle").click()
        page.wait_for_timeout(300)  # the drawer's slide
    page.locator("#new-project").click()
    panel = page.locator("dialog.project-dialog")
    panel.locator("#project-name").fill("Lisbon trip")
    panel.locator("#project-instructions").fill(PROJECT_INSTRUCTIONS)
    panel.locator("#project-save").click()
    panel.locator("#project-file-input").set_input_files(files=[PROJECT_FILE])
    expect(panel.locator(".project-file")).to_have_count(1)
    save("project-panel")
    panel.get_by_role("button", name="Close").click()
    if screen == "phone":
        page.locator("#sidebar-toggle").click()
        page.wait_for_timeout(300)
    page.locator(".project-new-chat").click()
    ask(page, "Where do we stay in Lisbon?", 1)
    if screen == "phone":
        page.locator("#sidebar-toggle").click()
        save("conversation-list")
    remove_projects(page, server)  # the next screen starts with none
    context.close()
    return written


def remove_projects(page, server) -> None:
    """Delete the user's projects with their conversations, through the API."""
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    for project in page.request.get(server.base_url + "/api/projects/").json()["projects"]:
        page.request.delete(
            f"{server.base_url}/api/projects/{project['id']}/?conversations=delete",
            headers={"X-CSRFToken": token, "Referer": server.base_url + "/"},
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with live_server() as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            for screen in SCREENS:
                for scheme in ("light", "dark"):
                    for path in shoot(browser, server, args.out, screen, scheme):
                        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Browser-test plumbing: Debian's Chromium driven by Playwright against ``live_daphne``.

Every browser test module sets ``pytestmark = pytest.mark.browser``. They skip only when
/usr/bin/chromium is missing (CI installs it). A JavaScript exception or an unexpected dialog
on a page fails the test that caused it. Screenshots go to test-output/screenshots/
(gitignored) for a human to look at; ``bin/test`` takes none (``FIMONE_TEST_SCREENSHOTS``).
"""

from __future__ import annotations

import io
import json
import os
import re
import threading
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
# What Playwright 1.65 disables itself (its ``chromiumSwitches``).
PLAYWRIGHT_DISABLED_FEATURES = [
    "AimEnabled",
    "AvoidCorsURLLoaderRestartOnRedirect",
    "AvoidUnnecessaryBeforeUnloadCheckSync",
    "DestroyProfileOnBrowserClose",
    "HttpsFirstBalancedModeAutoEnable",
    "HttpsUpgrades",
    "LensOverlay",
    "MediaRouter",
    "NetworkTimeServiceQuerying",
    "OptimizationHints",
    "PaintHolding",
    "PreconnectToSearch",
    "TcpPortRandomizationWin",
    "ThirdPartyStoragePartitioning",
    "msEdgeUpdateLaunchServicesPreferredVersion",
    "msForceBrowserSignIn",
]
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    # Chromium takes the last --disable-features it is given, so this list repeats
    # Playwright's own (test_chromium_args.py checks it still does). WebUIOmnibox*: every
    # new context opens a browser window whose address bar's popup is a web page of its own;
    # rendering it cost about 1.1 s of CPU per context, more than the test's own page
    # (docs/testing.md, "How long it takes"). No test uses the address bar.
    "--disable-features="
    + ",".join(
        [
            *PLAYWRIGHT_DISABLED_FEATURES,
            "WebUIOmniboxPopup",
            "WebUIOmniboxAimPopup",
            "WebUIOmniboxFullPopup",
        ]
    ),
]
SCREENSHOT_DIR = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"
DESKTOP = {"width": 1280, "height": 820}
PHONE = {"width": 390, "height": 844}
# Generous: the machine is small and shared; nothing here measures speed.
TIMEOUT_MS = 45_000


@pytest.fixture
def live_daphne_shared(request) -> bool:
    """Browser tests share a daphne per environment, each as a fresh user of its own
    (tests/support/shared_servers.py), unless marked ``own_server`` (docs/testing.md)."""
    return request.node.get_closest_marker("own_server") is None


@pytest.fixture
def live_daphne_group(request) -> str:
    """Tests marked ``module_server`` share a daphne with their module's tests only, each a
    fresh user of its own: what they change for every user of a server stays theirs
    (docs/testing.md)."""
    return request.module.__name__ if request.node.get_closest_marker("module_server") else ""


@pytest.fixture(scope="session")
def chromium():
    if not CHROMIUM.exists():
        pytest.skip("Debian chromium is not installed at /usr/bin/chromium (apt install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


class PageErrors(list):
    """Uncaught JavaScript errors and unexpected dialogs seen on a page."""


def _new_page(chromium, viewport, color_scheme="light"):
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    context = chromium.new_context(
        viewport=viewport, accept_downloads=False, color_scheme=color_scheme
    )
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    errors = PageErrors()
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    page.errors = errors
    # What a failed test's report shows of the page (``pytest_runtest_makereport``).
    page.console_lines = lines = []
    page.on("console", lambda message: lines.append(f"{message.type}: {message.text}"))
    page.on(
        "requestfailed",
        lambda request: lines.append(f"failed: {request.method} {request.url} {request.failure}"),
    )
    page.socket_log = _socket_log(page)
    page.confirm_dialogs = False  # a test that clicks Delete sets this to accept its confirm()

    def on_dialog(dialog):
        if dialog.type == "confirm" and page.confirm_dialogs:
            dialog.accept()
            return
        # Nobody expects it (an alert from injected script!): recorded, fails the test.
        errors.append(f"dialog {dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    return context, page


def login(page, server) -> None:
    """The chat page, logged in as the server's user with the session its seeding made:
    logging in through the form costs the server a password hash (about 0.3 s of CPU) per
    test. The form itself is tested where it is the subject (``login_through_form``)."""
    if not server.session_cookie:
        login_through_form(page, server)
        return
    page.context.add_cookies(
        [{"name": "sessionid", "value": server.session_cookie, "url": server.base_url}]
    )
    page.goto(server.base_url + "/")
    wait_ready(page)


def login_through_form(page, server) -> None:
    page.goto(server.base_url + "/")
    page.get_by_label("Username").fill(server.username)
    page.get_by_label("Password").fill(server.password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/(c/[^/]+/)?$"))
    wait_ready(page)


def wait_ready(page) -> None:
    """The chat page has started: its composer listens for keys."""
    page.locator("html[data-app=ready]").wait_for(state="attached")


def _socket_log(page) -> list[str]:
    """The page's websocket frames, a short line each: what a failed test's report shows of
    what the page was told."""
    log: list[str] = []

    def line(arrow: str, payload) -> None:
        try:
            frame = json.loads(payload)
        except (TypeError, ValueError):
            log.append(f"{arrow} {str(payload)[:80]}")
            return
        said = {k: v for k, v in frame.items() if k != "type"}
        log.append(f"{arrow} {frame.get('type')} {json.dumps(said)[:160]}")

    def on_socket(ws) -> None:
        log.append(f"open {ws.url}")
        ws.on("framesent", lambda payload: line("->", payload))
        ws.on("framereceived", lambda payload: line("<-", payload))
        ws.on("close", lambda _ws: log.append(f"closed {ws.url}"))

    page.on("websocket", on_socket)
    return log


def _make_page_fixture(viewport):
    @pytest.fixture
    def fixture(chromium, live_daphne):
        context, page = _new_page(chromium, viewport)
        login(page, live_daphne)
        yield page
        errors = list(page.errors)
        context.close()
        assert not errors, f"the page raised: {errors}"

    return fixture


logged_in_page = _make_page_fixture(DESKTOP)
logged_in_phone_page = _make_page_fixture(PHONE)


@pytest.fixture
def new_page(chromium):
    """A fresh, logged-out page factory: ``new_page(viewport=...)``."""
    contexts = []

    def make(viewport=DESKTOP, color_scheme="light"):
        context, page = _new_page(chromium, viewport, color_scheme)
        contexts.append(context)
        make.pages.append(page)
        return page

    make.pages = []  # for a failed test's report
    yield make
    errors = [error for page in make.pages for error in page.errors]
    for context in contexts:
        context.close()
    assert not errors, f"a page raised: {errors}"


def screenshot(page, name: str) -> Path:
    """The page as shown, for a human to look at (no test reads it). ``bin/test`` sets
    ``FIMONE_TEST_SCREENSHOTS=0``: the whole suite takes some 180 of them, each rendered
    and PNG-encoded by Chromium while the test waits (docs/testing.md, "Screenshots")."""
    path = SCREENSHOT_DIR / f"{name}.png"
    if os.environ.get("FIMONE_TEST_SCREENSHOTS", "1") == "0":
        return path
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path))
    return path


def png_bytes(color=(79, 70, 229), size=(64, 48)) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def png_file(tmp_path: Path, name: str, **kwargs) -> str:
    path = tmp_path / name
    path.write_bytes(png_bytes(**kwargs))
    return os.fspath(path)


def send(page, text: str) -> None:
    """Type a message and press Enter, as a person does."""
    prompt = page.locator("#prompt")
    prompt.click()
    prompt.fill(text)
    prompt.press("Enter")


def hold_saves(page, url_pattern) -> list:
    """Keep the page's ``PATCH`` requests to ``url_pattern`` from the server: the held routes
    are returned, for the test to ``continue_()`` when it chooses; other requests pass."""
    return hold_requests(page, url_pattern, method="PATCH")


def hold_requests(page, url_pattern, *, method: str) -> list:
    """``hold_saves`` for requests of any ``method``."""
    held = []

    def hold(route):
        if route.request.method == method:
            held.append(route)
        else:
            route.continue_()

    page.route(url_pattern, hold)
    return held


def enqueue_dag_with_one_replan(scripted_server) -> None:
    """Script a DAG run whose analyser rejects the first plan once (RD.6), then succeeds."""
    plan = '{"steps": [{"id": "s1", "task": "Find the height of Mont Blanc", "depends_on": []}]}'
    replan = (
        '{"steps": [{"id": "s1", "task": "Find the year it was measured", "depends_on": []},'
        ' {"id": "s2", "task": "Combine height and year", "depends_on": ["s1"]}]}'
    )
    scripted_server.enqueue(
        plan,  # planner
        "4,806 metres",  # step s1
        '{"achieved": false, "confidence": 0.3, "reason": "the year is missing"}',  # analyser
        replan,  # re-planner, round 1
        "Measured in 2015",  # step s1
        "4,806 m, measured in 2015",  # step s2
        '{"achieved": true, "confidence": 0.95, "reason": "complete"}',  # analyser
        "Mont Blanc is 4,806 m high (measured in 2015).",  # final answer
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed browser test's report carries the end of its daphnes' logs (a request that
    hung or failed on the server says so there, and the server's folder is gone after), its
    pages' console messages, failed requests and visible chat, and what the scripted model
    server was asked."""
    report = yield
    if not report.failed:
        return report
    funcargs = getattr(item, "funcargs", {})
    servers = [funcargs["live_daphne"]] if "live_daphne" in funcargs else []
    servers += getattr(funcargs.get("live_daphne_factory"), "servers", [])
    servers += getattr(funcargs.get("shared_daphne_factory"), "servers", [])
    for server in {id(server): server for server in servers}.values():
        report.sections.append((f"daphne log {server.base_url} (end)", server.log()[-8000:]))
    pages = [v for v in funcargs.values() if hasattr(v, "console_lines")]
    pages += getattr(funcargs.get("new_page"), "pages", [])
    if pages:
        report.sections.append(("browser pages", "\n\n".join(map(_page_state, pages))))
    scripted = funcargs.get("scripted_server")
    if scripted is not None:
        report.sections.append(("scripted model server", scripted.describe()))
    return report


def _page_state(page) -> str:
    """Where a page was, what its console and network said, and the chat it showed."""
    try:
        shown = page.locator("#messages").inner_text(timeout=2000)[-3000:]
    except Exception as exc:  # a closed page or one without a chat: the report says so
        shown = f"(no chat shown: {exc.__class__.__name__})"
    console = "\n".join([*page.errors, *page.console_lines[-60:]])
    frames = "\n".join(page.socket_log[-80:])
    return (
        f"{page.url}\n{console}\n--- websocket frames (last 80) ---\n{frames}"
        f"\n--- chat shown (end) ---\n{shown}"
    )


@pytest.fixture
def release(scripted_server):
    """A gate for a scripted stream held mid-answer (``held(..., release)``); opened after
    the test so that no stream is left waiting."""
    gate = threading.Event()
    yield gate
    gate.set()

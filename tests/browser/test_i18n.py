"""The interface in Chinese and German: a browser asking for the language gets all of the
UI and the offline model's answers in it; the language switch is remembered.

Screenshots (light and dark, desktop and 390×844) go to test-output/screenshots/i18n-*.
"""

from __future__ import annotations

import re
from pathlib import Path

import polib
import pytest
from playwright.sync_api import expect

from fimone.llm.offline.phrases import PHRASES
from fimone.llm.offline.text import LABELS
from tests.browser.conftest import DESKTOP, PHONE, screenshot, send, wait_ready

pytestmark = pytest.mark.browser

LOCALE = Path(__file__).resolve().parents[2] / "locale"
CATALOG_DIRS = {"zh": "zh_Hans/LC_MESSAGES", "de": "de/LC_MESSAGES"}
LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z_]{2,}")
# Latin words any page may show: names and identifiers (the model, the tool the offline
# model calls and its argument, shown in the call's row, the modes), and the language
# switch's names of the languages.
ALLOWED_LATIN = {
    "fimone",
    "offline",
    "react",
    "dag",
    "calculator",
    "expression",
    "english",
    "deutsch",
}
# Visible text plus the words a screen reader or a tooltip gives.
VISIBLE_WORDS_JS = """() => {
  const texts = [document.body.innerText];
  for (const node of document.querySelectorAll('[aria-label], [title], [placeholder]')) {
    if (!node.getClientRects().length) continue;  // not rendered
    for (const name of ['aria-label', 'title', 'placeholder']) {
      if (node.hasAttribute(name)) texts.push(node.getAttribute(name));
    }
  }
  return texts.join('\\n');
}"""


def vocabulary(language: str) -> set[str]:
    """The Latin-script words the language's own texts use: its catalogs' translations and
    the offline model's sentences (German shares "Plan", "Details"… with English)."""
    texts = [
        entry.msgstr + " " + " ".join(entry.msgstr_plural.values())
        for domain in ("django", "djangojs")
        for entry in polib.pofile(str(LOCALE / CATALOG_DIRS[language] / f"{domain}.po"))
    ]
    texts += [sentences[language] for sentences in PHRASES.values()]
    texts += list(LABELS[language].values())
    return {w.lower() for w in LATIN_WORD.findall(" ".join(texts))}


def foreign_words(page, language: str, username: str) -> list[str]:
    """Latin-script words on the page that are not the language's own: English leftovers."""
    words = LATIN_WORD.findall(page.evaluate(VISIBLE_WORDS_JS))
    allowed = ALLOWED_LATIN | vocabulary(language) | {username.lower()}
    allowed |= {w.lower() for w in LATIN_WORD.findall(LANGUAGES[language]["question"])}
    allowed |= {w.lower() for w in LATIN_WORD.findall(LANGUAGES[language]["dag_question"])}
    return sorted({w for w in words if w.lower() not in allowed})


def login_in_page_language(page, server, *, submit: str) -> None:
    page.goto(server.base_url + "/")
    page.locator("#id_username").fill(server.username)
    page.locator("#id_password").fill(server.password)
    page.get_by_role("button", name=submit, exact=True).click()
    page.wait_for_url(re.compile(r"/(c/[^/]+/)?$"))
    wait_ready(page)


def wait_done(page, count: int) -> None:
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(count)
    expect(page.locator("#stop")).to_be_hidden()


LANGUAGES = {
    "zh": {
        "locale": "zh-CN",
        "lang": "zh-hans",
        "login_title": "登录 · fimone",
        "login": "登录",
        "new_chat": "新对话",
        "placeholder": "给 fimone 发消息…",
        "empty": "有什么可以帮你的？",
        "note": "（这是 fimone 的离线模型给出的回答",
        "usage": re.compile(r"^输入 ~(?:\d+\.\dk|\d{1,3}) / 输出 ~(?:\d+\.\dk|\d{1,3})$"),
        "plan": re.compile(r"^计划 · \d+ 个步骤$"),
        "done": "完成",
        "verdict": "分析器：目标已达成",
        "copy": "复制",
        "question": "12*7 等于多少？",
        "dag_question": "计算 19*29",
    },
    "de": {
        "locale": "de-DE",
        "lang": "de",
        "login_title": "Anmelden · fimone",
        "login": "Anmelden",
        "new_chat": "Neuer Chat",
        "placeholder": "Nachricht an fimone …",
        "empty": "Wobei kann ich helfen?",
        "note": "(Das hat fimones Offline-Modell beantwortet",
        "usage": re.compile(r"^~(?:\d+\.\dk|\d{1,3}) ein / ~(?:\d+\.\dk|\d{1,3}) aus$"),
        "plan": re.compile(r"^Plan · \d+ Schritte$"),
        "done": "fertig",
        "verdict": "Analyse: Ziel erreicht",
        "copy": "Kopieren",
        "question": "Was ist 12*7, bitte?",
        "dag_question": "Berechne 19*29 bitte",
    },
}


@pytest.mark.parametrize("language", ["zh", "de"])
@pytest.mark.parametrize("color_scheme", ["light", "dark"])
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_session_in_the_browsers_language_is_all_in_it(
    chromium, live_daphne, language, color_scheme, viewport
):
    """Accept-Language zh-CN / de-DE: login, chat UI, ReAct and DAG answers of the offline
    model, usage cards, plan and verdict, all in that language."""
    expected = LANGUAGES[language]
    name = f"i18n-{language}-{color_scheme}-{'phone' if viewport == PHONE else 'desktop'}"
    context = chromium.new_context(
        viewport=viewport, color_scheme=color_scheme, locale=expected["locale"]
    )
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(live_daphne.base_url + "/")
        expect(page).to_have_title(expected["login_title"])
        expect(page.locator("html")).to_have_attribute("lang", expected["lang"])
        screenshot(page, f"{name}-login")
        login_in_page_language(page, live_daphne, submit=expected["login"])

        expect(page.locator("html")).to_have_attribute("lang", expected["lang"])
        expect(page.locator("#conversation-title")).to_have_text(expected["new_chat"])
        expect(page.locator("#prompt")).to_have_attribute("placeholder", expected["placeholder"])
        expect(page.locator("#empty-state h2")).to_have_text(expected["empty"])

        send(page, expected["question"])
        wait_done(page, 1)
        answer = page.locator(".msg-assistant").last
        expect(answer.locator(".answer")).to_contain_text("84")
        expect(answer.locator(".answer")).to_contain_text(expected["note"])
        expect(answer.locator(".usage-total")).to_have_text(expected["usage"])
        expect(answer.locator(".copy-btn")).to_have_text(expected["copy"])

        page.locator("label[for=mode-dag]").click()
        send(page, expected["dag_question"])
        wait_done(page, 2)
        dag = page.locator(".msg-assistant").last
        expect(dag.locator(".plan-head span").first).to_have_text(expected["plan"])
        for pill in dag.locator(".plan-step .pill").all():
            expect(pill).to_have_text(expected["done"])
        expect(dag.locator(".verdict")).to_contain_text(expected["verdict"])
        expect(dag.locator(".answer")).to_contain_text("551")
        expect(dag.locator(".answer")).to_contain_text(expected["note"])
        # The gauge has loaded (its label is the last piece of UI to arrive).
        expect(page.locator("#gauge")).to_be_visible()

        leftovers = foreign_words(page, language, live_daphne.username)
        assert not leftovers, f"untranslated on the {language} page: {leftovers}"
        screenshot(page, f"{name}-chat")
        if viewport == PHONE:
            page.locator("#sidebar-toggle").click()
            # The drawer slides in: the switch at its foot fully on screen means it is open.
            expect(page.locator(".lang-switch")).to_be_in_viewport(ratio=1)
            expect(page.locator(".lang-switch [aria-current=true]")).to_have_attribute(
                "lang", expected["lang"]
            )
            screenshot(page, f"{name}-sidebar")
        assert not errors, errors
    finally:
        context.close()


def test_the_language_switch_is_remembered_across_reloads(new_page, live_daphne):
    page = new_page(viewport=DESKTOP)
    page.goto(live_daphne.base_url + "/")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    # The switch works before logging in, too.
    page.locator(".lang-switch").get_by_role("button", name="Deutsch").click()
    expect(page.locator("html")).to_have_attribute("lang", "de")
    expect(page.get_by_label("Benutzername")).to_be_visible()
    login_in_page_language(page, live_daphne, submit="Anmelden")
    expect(page.locator("#conversation-title")).to_have_text("Neuer Chat")

    page.locator(".lang-switch").get_by_role("button", name="简体中文").click()
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    expect(page.locator("#conversation-title")).to_have_text("新对话")
    expect(page.locator(".lang-switch [aria-current=true]")).to_have_text("简体中文")
    send(page, "12*7")
    wait_done(page, 1)
    expect(page.locator(".msg-assistant .answer")).to_contain_text("离线模型")
    conversation_url = page.url

    page.reload()
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    expect(page.locator("#prompt")).to_have_attribute("placeholder", "给 fimone 发消息…")
    # The switch returns to the page it was used on (the open conversation).
    assert page.url == conversation_url
    expect(page.locator(".msg-assistant .usage-total")).to_have_text(
        re.compile(r"^输入 ~(?:\d+\.\dk|\d{1,3}) / 输出 ~(?:\d+\.\dk|\d{1,3})$")
    )
    screenshot(page, "i18n-switch-zh-after-reload")

    page.locator(".lang-switch").get_by_role("button", name="English").click()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    page.reload()
    expect(page.locator("#prompt")).to_have_attribute("placeholder", "Message fimone…")

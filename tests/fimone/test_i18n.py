"""Interface languages (config/settings.py, config/urls.py): English, Chinese, German.

The language comes from the switch's cookie, else the browser's Accept-Language; pages say
which one in ``<html lang>``; the static JS gets its strings from Django's JS catalog.
"""

from __future__ import annotations

import json
import re

import pytest
from django.conf import settings as django_settings
from django.test import Client

pytestmark = pytest.mark.django_db


def html_lang(response) -> str:
    match = re.search(r'<html lang="([^"]+)">', response.content.decode())
    assert match, "every page declares its language"
    return match.group(1)


def test_only_english_chinese_and_german_are_offered():
    assert [code for code, _ in django_settings.LANGUAGES] == ["en", "zh-hans", "de"]


@pytest.mark.parametrize(
    ("accept", "lang", "text"),
    [
        ("zh-CN,zh;q=0.9,en;q=0.5", "zh-hans", "登录"),
        ("de-DE,de;q=0.9", "de", "Benutzername"),
        ("fr-FR,fr;q=0.9", "en", "Username"),  # not offered: English
        ("", "en", "Username"),
    ],
)
def test_the_login_page_follows_accept_language(client, accept, lang, text):
    response = client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE=accept)
    assert response.status_code == 200
    assert html_lang(response) == lang
    assert text in response.content.decode()
    assert "Accept-Language" in response.get("Vary", "")


def test_the_chat_page_is_chinese_for_a_chinese_browser(client, user):
    client.force_login(user)
    response = client.get("/", HTTP_ACCEPT_LANGUAGE="zh-CN")
    body = response.content.decode()
    assert html_lang(response) == "zh-hans"
    for text in ("新对话", "有什么可以帮你的？", "给 fimone 发消息…", "退出登录"):
        assert text in body
    assert "What can I help with?" not in body


def test_the_switch_posts_the_choice_and_a_cookie_keeps_it(user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    page = client.get("/", HTTP_ACCEPT_LANGUAGE="en")
    assert 'action="/i18n/setlang/"' in page.content.decode()
    token = page.cookies["csrftoken"].value
    response = client.post(
        "/i18n/setlang/",
        {"language": "de", "csrfmiddlewaretoken": token},
        HTTP_REFERER="http://127.0.0.1/c/abc/",
        HTTP_HOST="127.0.0.1",
    )
    assert response.status_code == 302
    assert response["Location"] == "http://127.0.0.1/c/abc/"
    cookie = response.cookies[django_settings.LANGUAGE_COOKIE_NAME]
    assert cookie.value == "de"
    assert int(cookie["max-age"]) >= 30 * 24 * 3600  # remembered, not a session cookie
    # The cookie wins over the browser's own preference.
    again = client.get("/", HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert html_lang(again) == "de"
    assert "Neuer Chat" in again.content.decode()


def test_the_switch_needs_the_csrf_token(user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post("/i18n/setlang/", {"language": "de"})
    assert response.status_code == 403
    assert django_settings.LANGUAGE_COOKIE_NAME not in response.cookies


def test_a_language_that_is_not_offered_is_ignored(client):
    # Django knows French, fimone does not offer it: the pages stay in a language it offers.
    client.post("/i18n/setlang/", {"language": "fr"})
    response = client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="de")
    assert html_lang(response) == "de"
    assert "Benutzername" in response.content.decode()


@pytest.mark.parametrize(
    ("accept", "translated"),
    [("de-DE", "Verlauf zusammengefasst"), ("zh-CN", "历史已压缩为摘要")],
)
def test_the_js_catalog_carries_the_translations(client, accept, translated):
    response = client.get("/jsi18n/", HTTP_ACCEPT_LANGUAGE=accept)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/javascript")
    body = response.content.decode()
    assert json.dumps(translated)[1:-1] in body  # the catalog is JSON, non-ASCII escaped
    assert "function gettext" in body or "django.gettext" in body


def test_the_admin_speaks_the_users_language(admin_client):
    page = admin_client.get(
        "/admin/contextmgmt/modelconfig/add/", HTTP_ACCEPT_LANGUAGE="de"
    ).content.decode()
    for text in ("Token-Budget", "Anzeigename", "Anbieterprofil", "Kontextverwaltung"):
        assert text in page
    assert "Token budget" not in page
    listing = admin_client.get("/admin/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "上下文管理" in listing and "模型配置" in listing
    messages = admin_client.get(
        "/admin/chat/message/", HTTP_ACCEPT_LANGUAGE="zh-CN"
    ).content.decode()
    for column in ("对话", "角色", "类型", "状态", "已固定", "创建时间"):
        assert column in messages


def test_an_admin_form_error_is_in_the_users_language(admin_client):
    response = admin_client.post(
        "/admin/contextmgmt/modelconfig/add/",
        {
            "name": "x",
            "model": "m",
            "role": "main",
            "context_size": "8000",
            "max_output_tokens": "9000",
            "token_limit_param": "max_tokens",
            "provider_profile": "openai_compatible",
        },
        HTTP_ACCEPT_LANGUAGE="zh-CN",
    )
    assert response.status_code == 200  # the form again, with the error
    assert "最大输出 token 数必须小于上下文大小（8,000）。" in response.content.decode()


def test_a_markdown_export_is_headed_in_the_users_language(client, user):
    from chat import services
    from chat.models import Message

    conversation = services.conversation_create(owner=user, title="")
    Message.objects.create(
        conversation=conversation, role="user", kind="query", status="done", content="12*7"
    )
    client.force_login(user)
    text = client.get(
        f"/api/conversations/{conversation.id}/export/?format=markdown",
        HTTP_ACCEPT_LANGUAGE="zh-CN",
    ).content.decode()
    assert text.startswith("# 未命名对话\n")
    assert "- 模式：ReAct" in text and "### 用户 · " in text


def test_the_not_found_page_is_in_the_users_language(client, user):
    client.force_login(user)
    response = client.get("/c/not-a-uuid/", HTTP_ACCEPT_LANGUAGE="de")
    assert response.status_code == 404
    assert html_lang(response) == "de"
    assert "Diese Seite gibt es nicht" in response.content.decode()


def test_the_server_error_page_renders_alone_in_the_users_language():
    from django.template.loader import render_to_string
    from django.utils import translation

    with translation.override("zh-hans"):
        page = render_to_string("500.html")
    assert '<html lang="zh-hans">' in page and "服务器出错了" in page

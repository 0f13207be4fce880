"""The chat page and its context gauge (chat/pages.py): access, CSP, gauge figures."""

from __future__ import annotations

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from chat import services
from chat.history import load_history
from chat.models import Attachment, ContextSummary
from contextmgmt.core.compact import CompactUtils
from contextmgmt.core.messages import ChatMessage
from tests.chat.images import image_bytes
from tests.support.factories import add_message

pytestmark = pytest.mark.django_db

WRITES = {"INSERT", "UPDATE", "DELETE", "REPLACE"}


def ui_config(response) -> dict:
    match = re.search(
        r'<script id="ui-config" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.S,
    )
    assert match, "the page embeds its configuration as JSON data"
    return json.loads(match.group(1))


@pytest.fixture
def small_budget(settings):
    # 20,000 context - 4,000 output - 4,000 reserve = 12,000 usable (R5.1, R5.2 env source).
    settings.LLM_CONTEXT_SIZE = 20_000
    settings.LLM_MAX_OUTPUT_TOKENS = 4_000
    return 12_000


def test_the_page_needs_a_login(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/"


def test_the_page_embeds_its_config_and_sets_a_strict_csp(logged_in_client, settings):
    for name in ("LLM_BASE_URL", "LLM_MODEL", "FAST_LLM_BASE_URL", "FAST_LLM_MODEL"):
        setattr(settings, name, "")
    response = logged_in_client.get("/")
    assert response.status_code == 200
    config = ui_config(response)
    assert config["username"] == "alice"
    assert config["conversationId"] is None
    assert config["offline"] is True  # nothing configured: the offline model answers
    assert 'id="offline-note"' in response.content.decode()
    csp = response["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert "csrftoken" in response.cookies  # the JS reads it for X-CSRFToken


def test_a_configured_model_shows_no_offline_note(logged_in_client, settings):
    settings.LLM_BASE_URL = "http://127.0.0.1:9/v1"
    settings.LLM_MODEL = "real-model"
    response = logged_in_client.get("/")
    config = ui_config(response)
    assert config["offline"] is False
    assert config["llm"]["main"]["model"] == "real-model"
    # There for a conversation that picks the built-in model, hidden until one does.
    assert 'id="offline-note" class="notice" role="note" data-answering="false"' in (
        response.content.decode()
    )


def test_conversation_page_is_owner_only(logged_in_client, conversation, foreign_conversation):
    own = logged_in_client.get(f"/c/{conversation.id}/")
    assert own.status_code == 200
    assert ui_config(own)["conversationId"] == str(conversation.id)
    assert logged_in_client.get(f"/c/{foreign_conversation.id}/").status_code == 404
    assert logged_in_client.get("/c/not-a-uuid/").status_code == 404


def test_gauge_is_owner_only_and_needs_a_login(logged_in_client, foreign_conversation):
    url = f"/api/conversations/{foreign_conversation.id}/context/"
    assert logged_in_client.get(url).status_code == 404
    assert Client().get(url).status_code == 401


def test_gauge_counts_the_history_against_the_main_budget(
    logged_in_client, conversation, small_budget
):
    url = f"/api/conversations/{conversation.id}/context/"
    empty = logged_in_client.get(url).json()
    assert empty["history_tokens"] == 0
    # Even an empty conversation's request carries the system prompt and tool schemas.
    fixed = empty["used_tokens"]
    assert 0 < fixed == small_budget - empty["history_room_tokens"]
    assert empty["budget"]["usable_input_tokens"] == small_budget
    assert empty["budget"]["source"] == "env"
    assert empty["will_compact"] is False

    texts = [("user", "How tall is Mont Blanc?"), ("assistant", "About 4,806 metres.")]
    for role, content in texts:
        add_message(conversation, role, content)
    add_message(conversation, "assistant", "The model is unreachable.", kind="error")

    info = logged_in_client.get(url).json()
    expected = CompactUtils.estimate_messages_tokens(
        [ChatMessage(role=role, content=content) for role, content in texts]
    )
    assert info["history_tokens"] == expected  # error messages are not history
    assert info["used_tokens"] == fixed + expected
    assert info["message_count"] == 2
    assert info["percent"] == round(100 * (fixed + expected) / small_budget, 1)


def post_images(conversation, *sizes: tuple[int, int]) -> list:
    """A user message carrying one image of each size, and its answer."""
    images = [
        services.attachment_create(
            owner=conversation.owner,
            conversation=conversation,
            uploaded_file=SimpleUploadedFile(
                f"{w}x{h}.png", image_bytes("PNG", (w, h)), "image/png"
            ),
        )
        for w, h in sizes
    ]
    services.user_message_create(conversation=conversation, content="Look", attachments=images)
    add_message(conversation, "assistant", "Seen.")
    return images


@pytest.fixture
def seeing_model(settings):
    settings.LLM_MODEL = "vision-1"  # configured in the environment, able to see by default
    settings.LLM_SUPPORTS_VISION = True


def test_gauge_counts_each_image_once_as_pixels_or_words_as_the_run_sends_it(
    logged_in_client, conversation, small_budget, seeing_model, settings
):
    """For a model that sees, the newest turns' images are counted by their size under the
    tile rule and not also by their description; older turns' images by their description."""
    settings.FIMONE_IMAGE_PIXEL_TURNS = 1
    url = f"/api/conversations/{conversation.id}/context/"
    post_images(conversation, (800, 600))
    post_images(conversation, (1920, 1080), (32, 24))

    history = logged_in_client.get(url).json()["history_tokens"]

    # What a run of this model loads and sends: the pixels read from the files.
    sent = load_history(conversation.id).messages
    assert [len(m.image_parts()) for m in sent] == [0, 0, 2, 0]
    assert history == CompactUtils.estimate_messages_tokens(sent)
    words = load_history(conversation.id, vision=False).messages
    look, seen = (
        ChatMessage(role="user", content="Look"),
        ChatMessage(role="assistant", content="Seen."),
    )
    # 1,105 and 255 tokens by the tile rule, and the text without the two descriptions.
    assert history == CompactUtils.estimate_messages_tokens([*words[:2], look, seen]) + 1105 + 255


def test_gauge_counts_only_descriptions_for_a_model_that_cannot_see(
    logged_in_client, conversation, small_budget, seeing_model, settings
):
    settings.LLM_SUPPORTS_VISION = False
    url = f"/api/conversations/{conversation.id}/context/"
    post_images(conversation, (1920, 1080), (32, 24))

    history = logged_in_client.get(url).json()["history_tokens"]

    words = load_history(conversation.id, vision=False).messages
    assert "[image: 1920x1080.png, 1920x1080 — PNG 1920x1080" in words[0].text()
    assert history == CompactUtils.estimate_messages_tokens(words)


def test_gauge_of_a_dag_conversation_counts_history_images_as_descriptions(
    logged_in_client, conversation, small_budget, seeing_model
):
    """The DAG planner reads the history as text: even for a model that sees, a DAG run
    loads every history image as its description, and the gauge counts that."""
    conversation.mode = "dag"
    conversation.save(update_fields=["mode"])
    url = f"/api/conversations/{conversation.id}/context/"
    post_images(conversation, (1920, 1080), (32, 24))

    history = logged_in_client.get(url).json()["history_tokens"]

    words = load_history(conversation.id, vision=False).messages
    assert history == CompactUtils.estimate_messages_tokens(words)
    assert history < CompactUtils.estimate_messages_tokens(load_history(conversation.id).messages)


def test_reading_the_gauge_writes_nothing_even_for_an_image_never_described(
    logged_in_client, conversation, small_budget, seeing_model, settings
):
    """An image stored before descriptions existed is described for the count, in memory:
    the run that needs its words stores them, a GET does not."""
    settings.FIMONE_IMAGE_PIXEL_TURNS = 0
    url = f"/api/conversations/{conversation.id}/context/"
    [old] = post_images(conversation, (640, 480))
    Attachment.objects.filter(pk=old.pk).update(description="", description_source="")

    with CaptureQueriesContext(connection) as queries:
        history = logged_in_client.get(url).json()["history_tokens"]

    writes = [q["sql"] for q in queries if q["sql"].split()[0].upper() in WRITES]
    assert writes == []
    old.refresh_from_db()
    assert (old.description, old.description_source) == ("", "")
    # Counted by the words a run would store and send.
    words = load_history(conversation.id, vision=False).messages
    assert "PNG 640x480" in words[0].text()
    assert history == CompactUtils.estimate_messages_tokens(words)


def test_gauge_flags_an_over_budget_history(logged_in_client, conversation, small_budget):
    url = f"/api/conversations/{conversation.id}/context/"
    for _ in range(8):
        add_message(conversation, "user", "lorem ipsum " * 600)  # ~1,800 tokens each
        add_message(conversation, "assistant", "Noted.")
    info = logged_in_client.get(url).json()
    assert info["history_tokens"] > small_budget
    # The next request fits the history to its room first: it sends the whole budget.
    assert info["used_tokens"] == small_budget
    assert info["percent"] == 100.0
    assert info["will_compact"] is True


def test_gauge_starts_from_the_newest_persisted_summary(
    logged_in_client, conversation, small_budget
):
    url = f"/api/conversations/{conversation.id}/context/"
    old = [add_message(conversation, "user", "old detail " * 400) for _ in range(3)]
    recent = add_message(conversation, "assistant", "Recent answer.")
    before = logged_in_client.get(url).json()
    ContextSummary.objects.create(
        conversation=conversation,
        covers_through=old[-1],
        content="[Conversation summary] The user asked about old details.",
        covered_count=3,
    )

    after = logged_in_client.get(url).json()

    assert before["message_count"] == 4 and after["message_count"] == 1
    recent_only = CompactUtils.estimate_messages_tokens(
        [ChatMessage(role="assistant", content=recent.content)]
    )
    assert recent_only < after["history_tokens"] < before["history_tokens"] / 10


def test_gauge_counts_in_the_picked_models_calibrated_weights_rk_2(logged_in_client, conversation):
    from contextmgmt.core.tokens import BASE_WEIGHTS, CLASSES, use_weights
    from contextmgmt.models import ModelConfig

    # A model whose tokenizer was learnt to count Cyrillic twice as dear as o200k_base.
    cyrillic = CLASSES.index("cyrillic")
    weights = [w * 2 if i == cyrillic else w for i, w in enumerate(BASE_WEIGHTS)]
    model = ModelConfig.objects.create(
        name="Calibrated", model="calibrated-1", role="main", token_weights=weights
    )
    conversation.model_config = model
    conversation.save(update_fields=["model_config"])
    text = "Контекстное окно конечно, история занимает бюджет. " * 20
    add_message(conversation, "user", text)
    add_message(conversation, "assistant", text)

    info = logged_in_client.get(f"/api/conversations/{conversation.id}/context/").json()

    history = [ChatMessage(role="user", content=text), ChatMessage(role="assistant", content=text)]
    base = CompactUtils.estimate_messages_tokens(history)
    with use_weights(tuple(weights)):
        calibrated = CompactUtils.estimate_messages_tokens(history)
    assert calibrated > base * 1.5
    assert info["message_count"] == 2
    assert info["history_tokens"] == calibrated


def test_the_page_says_past_what_size_text_goes_as_a_document(logged_in_client, settings):
    """RU.10: the composer attaches text longer than FIMONE_PASTE_ATTACH_CHARS, a size
    held below the message limit so that nothing it sends is refused for length."""
    config = ui_config(logged_in_client.get("/"))
    assert (config["pasteAttachChars"], config["maxMessageChars"]) == (20_000, 100_000)
    settings.FIMONE_PASTE_ATTACH_CHARS = 500_000
    settings.FIMONE_WS_MAX_CONTENT_CHARS = 1_000
    config = ui_config(logged_in_client.get("/"))
    assert (config["pasteAttachChars"], config["maxMessageChars"]) == (999, 1_000)


def test_the_page_passes_the_instructions_limit_to_the_panels(logged_in_client, settings):
    """RJ.4: the project panel and a chat's instructions count against the server's limit,
    FIMONE_INSTRUCTIONS_MAX_CHARS, read when the page is served."""
    assert ui_config(logged_in_client.get("/"))["maxInstructionsChars"] == 8_000
    settings.FIMONE_INSTRUCTIONS_MAX_CHARS = 1_200
    assert ui_config(logged_in_client.get("/"))["maxInstructionsChars"] == 1_200

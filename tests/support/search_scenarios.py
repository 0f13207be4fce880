"""Full-text search scenarios run on both databases: by the SQLite tests in ``tests/chat``
and, in a Django subprocess on PostgreSQL, by ``tests/scale/test_search_postgres.py``.

Each scenario builds its own users, conversations and projects (with files) through the
services, so the index is kept the way the application keeps it, and asserts what a user
would see.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.utils import timezone

from chat import services
from chat.models import Conversation, Message, SearchDocument
from chat.recall.lookup import recall_passages
from chat.search import index as search_index
from chat.search.conversations import search


def make_user(prefix: str = "u"):
    return get_user_model().objects.create_user(username=f"{prefix}-{uuid.uuid4().hex[:10]}")


def say(conversation: Conversation, content: str, role: str = "user", **finish) -> Message:
    if role == "user":
        return services.user_message_create(conversation=conversation, content=content)
    message = services.assistant_message_start(conversation=conversation, run_id="r", mode="react")
    return services.assistant_message_finish(message=message, content=content, **finish)


def age(message: Message, days: int) -> None:
    """Date a message (and its index documents) ``days`` back."""
    when = timezone.now() - timedelta(days=days)
    Message.objects.filter(pk=message.pk).update(created_at=when)
    SearchDocument.objects.filter(message=message).update(created_at=when)


def new_conversation(owner=None, title: str = "") -> Conversation:
    return services.conversation_create(owner=owner or make_user(), title=title)


def passages(conversation: Conversation, query: str, **kw) -> list[str]:
    return recall_passages(conversation_id=conversation.id, query=query, **kw)


def old_passage_with_all_terms_beats_newer_ones_with_one() -> None:
    conversation = new_conversation()
    old = say(conversation, "The staging database password rotation happens every Tuesday.")
    age(old, 90)
    for text in (
        "The staging server is slow today.",
        "Our database backups are nightly.",
        "Password managers are recommended.",
        "The rotation of the on-call schedule changed.",
    ):
        say(conversation, text)
    found = passages(conversation, "staging database password rotation")
    assert "every Tuesday" in found[0], found
    assert len(found) == 5


def whole_words_only() -> None:
    conversation = new_conversation()
    say(conversation, "The release went out on Monday.")
    say(conversation, "The new lease starts in May.", role="assistant")
    found = passages(conversation, "lease")
    assert len(found) == 1 and "new lease starts in May" in found[0], found
    assert passages(conversation, "leas") == []


def chinese_is_searchable() -> None:
    conversation = new_conversation()
    say(conversation, "我们的预算是三万元，项目代号是青龙。")
    say(conversation, "明天开会讨论预定的房间。")
    found = passages(conversation, "预算")
    assert len(found) == 1 and "三万元" in found[0], found
    (dragon,) = passages(conversation, "青龙")
    assert "项目代号是青龙" in dragon
    assert passages(conversation, "算预") == []  # the characters, in order
    # Mixed with Latin words and in a German sentence's case.
    say(conversation, "Die Übergabe an Team 北京 ist am Montag.")
    (mixed,) = passages(conversation, "ÜBERGABE")
    assert "Team 北京" in mixed


def tool_results_are_searchable() -> None:
    conversation = new_conversation()
    say(conversation, "Look up the tracking number.")
    answer = services.assistant_message_start(conversation=conversation, run_id="r", mode="react")
    steps = [
        {"kind": "tool_call", "name": "shipping", "arguments": '{"order": "A-1"}'},
        {"kind": "tool_result", "name": "shipping", "result": "Parcel ZX-4471 left Rotterdam."},
        {"kind": "tool_result", "name": "recall", "result": "Passages … Rotterdam …"},
    ]
    services.assistant_message_finish(
        message=answer, content="It is on its way.", extra={"steps": steps}
    )
    (found,) = passages(conversation, "Rotterdam")
    assert found.startswith("tool result of shipping (in your answer of ")
    assert "2nd in this chat" in found, found
    assert "Parcel ZX-4471 left Rotterdam." in found


def retried_answers_and_other_users_are_never_returned() -> None:
    conversation = new_conversation()
    say(conversation, "What is the code word?")
    failed = say(conversation, "The code word is heron (partial)", role="assistant", status="error")
    retry = services.assistant_message_start(conversation=conversation, run_id="r2", mode="react")
    # What a retry stores on the failed answer.
    Message.objects.filter(pk=failed.pk).update(superseded_by=retry)
    services.assistant_message_finish(message=retry, content="The code word is heron.")
    (found,) = passages(conversation, "heron")
    # The failed answer is hidden: the retry is the chat's second message.
    assert "(partial)" not in found and "2nd in this chat" in found, found
    # An edited question is kept marked superseded too: only its new wording is found.
    old_question = say(conversation, "Is the egret nesting?")
    new_question = say(conversation, "Is the egret still nesting?")
    Message.objects.filter(pk=old_question.pk).update(superseded_by=new_question)
    (egret,) = passages(conversation, "egret")
    assert "still nesting" in egret
    stranger = new_conversation(title="heron notes")
    say(stranger, "heron heron heron")
    assert len(passages(conversation, "heron")) == 1
    owner_hits = search(query="heron", owner_id=conversation.owner_id)
    assert {h.document.conversation_id for h in owner_hits} == {conversation.id}


def index_follows_edits_and_deletes() -> None:
    owner = make_user()
    conversation = new_conversation(owner, title="Kestrel planning")
    assert [h.document.kind for h in search(query="kestrel", owner_id=owner.pk)] == ["title"]
    services.conversation_update(conversation=conversation, title="Falcon planning")
    assert search(query="kestrel", owner_id=owner.pk) == []
    assert len(search(query="falcon", owner_id=owner.pk)) == 1
    # An answer's text changes while its run goes on; the index holds what was stored last.
    answer = services.assistant_message_start(conversation=conversation, run_id="r", mode="react")
    services.assistant_message_finish(message=answer, content="Draft about osprey", status="error")
    services.assistant_message_finish(message=answer, content="Final about merlin")
    assert passages(conversation, "osprey") == []
    assert len(passages(conversation, "merlin")) == 1
    # An edited message, reindexed by whoever edits it.
    question = say(conversation, "Ask about buzzard")
    question.content = "Ask about harrier"
    question.save(update_fields=["content"])
    search_index.index_message(message=question)
    assert passages(conversation, "buzzard") == []
    assert len(passages(conversation, "harrier")) == 1
    services.conversation_delete(conversation=conversation)
    assert search(query="harrier merlin falcon", owner_id=owner.pk) == []
    assert not SearchDocument.objects.filter(conversation__owner=owner).exists()


def rebuild_recomputes_the_index() -> None:
    owner = make_user()
    conversation = new_conversation(owner, title="Gannet")
    say(conversation, "The gannet dives at 100 km/h.")
    SearchDocument.objects.filter(conversation=conversation).delete()
    assert search(query="gannet", owner_id=owner.pk) == []
    count = search_index.rebuild(conversations=Conversation.objects.filter(pk=conversation.pk))
    assert count == 2
    assert sorted(h.document.kind for h in search(query="gannet", owner_id=owner.pk)) == [
        "message",
        "title",
    ]


def query_syntax_is_never_interpreted() -> None:
    owner = make_user()
    conversation = new_conversation(owner, title="syntax")
    say(conversation, 'He said "NEAR" AND OR NOT * ^ the end')
    for query in ['"', "AND OR", "NOT *", "near(", "' | !", "a:*", "-", "\\", "x <-> y"]:
        search(query=query, owner_id=owner.pk)  # no syntax error from either engine
    assert len(search(query='"near" AND', owner_id=owner.pk)) == 1


def every_word_and_a_prefix_for_the_search_box() -> None:
    from chat.search.text import Term

    owner = make_user()
    conversation = new_conversation(owner, title="Ops")
    say(conversation, "Deploy the invoice service to Frankfurt.")
    say(conversation, "Frankfurt weather is mild.")
    both = search(query="frankfurt invoice", owner_id=owner.pk, match_all=True)
    assert [h.document.body for h in both] == ["Deploy the invoice service to Frankfurt."]
    typed = [Term(("frankfurt",)), Term(("invo",), prefix=True)]
    assert len(search(query=typed, owner_id=owner.pk, match_all=True)) == 1
    assert search(query=[Term(("invo",))], owner_id=owner.pk) == []


def a_detail_stated_once_is_not_pushed_out_by_repeats_of_its_key_word() -> None:
    """RF.4: twenty short turns naming a topic do not fill every recall slot; the one
    longer message that stated the detail (a URL) is among the passages, and a text said
    several times is quoted once."""
    conversation = new_conversation()
    say(conversation, "The latency dashboard lives at https://grafana.example.com/d/x7?orgId=2.")
    for _ in range(4):
        for ask in (
            "What are the risks with the dashboard?",
            "Can you summarise the dashboard?",
            "Who owns the dashboard now?",
            "Could you draft three bullet points about the dashboard?",
            "Is there anything we forgot regarding the dashboard?",
        ):
            say(conversation, ask)
    found = passages(conversation, "dashboard")
    assert any("https://grafana.example.com/d/x7?orgId=2" in p for p in found), found
    assert len(found) == 6 and sum("[said 4 times]" in p for p in found) == 5, found


def _paste(rng_seed: int, chars: int) -> str:
    """A pasted export of serial numbers and statuses, ``chars`` long."""
    import random

    rng = random.Random(rng_seed)
    lines, size = [], 0
    while size < chars:
        line = (
            f"SN-{rng.randint(100000, 999999)} | Lager {rng.choice('ABCDE')}{rng.randint(1, 40)}"
            f" | status {rng.choice(['ok', 'ok', 'prüfen', 'defekt'])} | {rng.randint(1, 90)} Stk"
        )
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def one_mention_in_a_long_paste_is_found_on_its_passage() -> None:
    """A detail on one line of a 20,000-character paste is quoted from its passage, ahead
    of a dozen short messages naming the same word in passing."""
    conversation = new_conversation()
    rows = _paste(3, 20_000).split("\n")
    rows.insert(
        len(rows) * 2 // 3, "Hinweis: der Spediteur holt am Gate 7 ab, Kennzeichen HH-KL 4821"
    )
    message = say(conversation, "Hier der Export aus dem Lager:\n" + "\n".join(rows))
    for i in range(12):
        say(conversation, f"Which Spediteur should we use for route {i}?")
    documents = SearchDocument.objects.filter(message=message)
    assert documents.count() > 10
    assert all(len(d.body) <= 1_500 for d in documents)
    assert all(message.content[d.offset : d.offset + len(d.body)] == d.body for d in documents)
    found = passages(conversation, "Spediteur")
    assert "HH-KL 4821" in found[0], found


def a_table_row_is_found_by_its_column_name() -> None:
    """A row far below a table's header is found by a word of the header."""
    conversation = new_conversation()
    header = "| Standort | Ansprechpartner | Telefon | Mietpreis |"
    rows = [f"| Halle {i} | Person {i} | 030 {1000 + i} | {800 + i},00 € |" for i in range(120)]
    rows[97] = "| Halle 97 | Frau Okonkwo | 030 1097 | 1.240,00 € |"
    say(conversation, "\n".join([header, "|---|---|---|---|", *rows]), role="assistant")
    found = passages(conversation, "Mietpreis Okonkwo")
    assert "1.240,00 €" in found[0], found


def german_compounds_are_found_by_their_parts() -> None:
    """ "Adresse" finds "Lieferadresse" in a German text; English words stay whole."""
    conversation = new_conversation()
    say(conversation, "Die Lieferadresse ist Musterstraße 12, 10115 Berlin, bitte nicht vergessen.")
    say(conversation, "Die Rechnungsnummer für den Auftrag ist RE-2026-118.")
    say(conversation, "The lease ends in May.")
    (address,) = passages(conversation, "Adresse")
    assert "Musterstraße 12" in address
    (invoice,) = passages(conversation, "Rechnung")
    assert "RE-2026-118" in invoice
    assert passages(conversation, "ease") == []


def chinese_words_are_found_by_their_parts() -> None:
    """A part of a Chinese word finds it (every character is a token)."""
    conversation = new_conversation()
    say(conversation, "展位号改为 B2-17，请通知参展商联系人。")
    say(conversation, "明天下午开会。")
    (booth,) = passages(conversation, "展位")
    assert "B2-17" in booth
    (exhibitor,) = passages(conversation, "参展商")
    assert "B2-17" in exhibitor


# --- RF.10: the value, not the mentions ----------------------------------------------------

_FILLER_ASKS = (
    "Did the {k} confirm the {t}?",
    "We should ask the {k} about the {t} again.",
    "Is the {k} still fine with the {t}?",
    "The {k} has not replied about the {t} yet.",
    "Who talked to the {k} about the {t}?",
)
_FILLER_TOPICS = ("schedule", "budget", "kickoff", "contract")


def _filler_mentions(conversation: Conversation, key: str, part: slice = slice(None)) -> None:
    """Short messages naming ``key`` with no value (20 distinct ones; ``part`` of them),
    each acknowledged."""
    mentions = [ask.format(k=key, t=topic) for topic in _FILLER_TOPICS for ask in _FILLER_ASKS]
    for text in mentions[part]:
        say(conversation, text)
        say(conversation, "Noted, I will keep it in mind.", role="assistant")


def a_stated_value_comes_first_among_20_filler_mentions_of_its_key() -> None:
    """RF.10: the message stating the translator's number is the first passage, ahead of
    20 short messages that only name the translator (in English and in Japanese)."""
    conversation = new_conversation()
    _filler_mentions(conversation, "translator", slice(0, 10))
    say(conversation, "The translator's direct line is +49 30 9018 2277, best before noon.")
    _filler_mentions(conversation, "translator", slice(10, 20))
    for ask in ("翻訳者は{t}について確認しましたか？", "{t}の翻訳者の件はまだ未解決です。"):
        for topic in (
            "日程",
            "予算",
            "契約",
            "研修",
            "監査",
            "報告",
            "会議",
            "計画",
            "発表",
            "引き継ぎ",
        ):
            say(conversation, ask.format(t=topic))
    say(conversation, "翻訳者の直通電話は03-5551-0199です。")
    found = passages(conversation, "translator")
    assert "+49 30 9018 2277" in found[0], found
    found = passages(conversation, "翻訳者")
    assert "03-5551-0199" in found[0], found


def a_value_given_in_reply_to_a_question_is_quoted_with_the_question() -> None:
    """RF.10: "Your EORI number?" holds the key, the user's reply only the value: the
    question is quoted with its reply, first among 20 filler mentions; and an answer is
    quoted with the question it answered."""
    conversation = new_conversation()
    _filler_mentions(conversation, "EORI")
    say(conversation, "Your EORI number, please?", role="assistant")
    say(conversation, "DE884123456789012")
    say(conversation, "Thanks, noted.", role="assistant")
    found = passages(conversation, "EORI")
    assert found[0].startswith("your answer ("), found
    assert "Your EORI number, please?\n↳ reply, the user's message (" in found[0], found
    assert found[0].endswith("): DE884123456789012"), found
    say(conversation, "Which warehouse gate do we use?")
    say(conversation, "Gate 17, the warehouse code is WH-5523.", role="assistant")
    found = passages(conversation, "warehouse")
    assert found[0].startswith("in reply to the user's message ("), found
    assert "Which warehouse gate do we use?\nyour answer (" in found[0], found
    assert len(found) == 1, found  # the question is not quoted a second time


def the_quote_is_centred_on_the_match_that_states_the_value() -> None:
    """RF.10: a long message names the translator in passing at its start and gives the
    number 1,000 characters later: the 600-character quote holds the number."""
    conversation = new_conversation()
    padding = " ".join(["We walked through the agenda once more."] * 25)
    text = (
        f"Did the translator see the agenda? {padding} The translator's phone is +44 20 7946 0958."
    )
    assert len(text) > 1_000
    say(conversation, text)
    (found,) = passages(conversation, "translator")
    assert "+44 20 7946 0958" in found, found
    body = found.split("): ", 1)[1]
    assert body.startswith("…") and body[1:].strip() in text, body
    assert len(body) <= 601


def a_hit_is_named_by_its_date_and_place_in_the_chat() -> None:
    """RF.10: "the user's message (3 March 2026 14:05 UTC, 5th in this chat)": the place
    counts the conversation's shown messages before it, not the hidden ones."""
    from datetime import UTC, datetime

    conversation = new_conversation()
    said = [
        say(conversation, "Hello"),
        say(conversation, "Hi, how can I help?", role="assistant"),
        say(conversation, "An old wording"),
        say(conversation, "Let us plan the trip."),
        say(conversation, "Sure.", role="assistant"),
        say(conversation, "The ferry ticket number is FT-88120."),
        say(conversation, "Your ferry ticket is FT-88120, noted.", role="assistant"),
    ]
    Message.objects.filter(pk=said[2].pk).update(superseded_by=said[3])  # edited: hidden
    for minute, message in enumerate(said):
        when = datetime(2026, 3, 3, 14, minute, tzinfo=UTC)
        Message.objects.filter(pk=message.pk).update(created_at=when)
        SearchDocument.objects.filter(message=message).update(created_at=when)
    found = passages(conversation, "ferry ticket")
    assert any(
        p.startswith("the user's message (3 March 2026 14:05 UTC, 5th in this chat): The ferry")
        for p in found
    ), found
    assert any(
        p.startswith("your answer (3 March 2026 14:06 UTC, 6th in this chat): ") for p in found
    ), found


# --- a project's files ------------------------------------------------------------------

DEPOT_FACT = "The spare key of the Oslo depot hangs behind the blue fuse box."


def _handbook(chars: int = 40_000, at: float = 0.7) -> bytes:
    """A plain-text handbook of about ``chars`` characters, ``DEPOT_FACT`` at ``at`` of it."""
    paragraphs: list[str] = []
    size = 0
    while size < chars:
        if DEPOT_FACT not in paragraphs and size >= chars * at:
            paragraphs.append(DEPOT_FACT)
        paragraph = (
            f"Section {len(paragraphs) + 1}. The working group reviewed the minutes and the rota "
            "for the canteen and the plans for the autumn fair; nothing here needs any action."
        )
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(paragraphs).encode()


def _project_with_files(*files: tuple[str, bytes]):
    """A new user's project holding ``files`` (name, text), each indexed as on the upload's
    commit (inside a test's transaction as after a real one)."""
    from django.test import TestCase

    from tests.support.factories import add_project_file, make_project

    project = make_project(make_user("p"), name="Depots")
    with TestCase.captureOnCommitCallbacks(execute=True):
        for name, data in files:
            add_project_file(project, name, data, "text/plain")
    return project


def _recalled(conversation: Conversation, query: str) -> list[str]:
    found = recall_passages(
        conversation_id=conversation.id, query=query, project_id=conversation.project_id
    )
    return [p for p in found if isinstance(p, str)]


def a_project_file_is_recalled_with_its_file_and_page() -> None:
    project = _project_with_files(
        ("handbook.txt", _handbook()), ("rota.txt", b"The canteen rota changes on Mondays.")
    )
    conversation = services.conversation_create(owner=project.owner, project_id=project.pk)
    say(conversation, "Hello, where do we keep things?")
    found = _recalled(conversation, "spare key Oslo depot")
    assert found and DEPOT_FACT in found[0], found
    assert found[0].startswith("project file handbook.txt, page "), found[0]
    page = int(found[0].split("page ", 1)[1].split(":", 1)[0])
    assert page > 1, found[0]  # 70 % into a file of several pages
    (rota,) = [p for p in _recalled(conversation, "canteen rota Mondays") if "Mondays" in p]
    assert rota.startswith("project file rota.txt, page 1"), rota


def a_project_file_is_found_only_from_the_projects_own_conversations() -> None:
    project = _project_with_files(("handbook.txt", _handbook()))
    owner = project.owner
    first = services.conversation_create(owner=owner, project_id=project.pk)
    second = services.conversation_create(owner=owner, project_id=project.pk)
    say(first, "The pass phrase of the tandem bicycle is marmalade.")
    # The project's files, never its other conversations.
    assert not [p for p in _recalled(second, "tandem bicycle pass phrase") if "marmalade" in p]
    assert any("marmalade" in p for p in _recalled(first, "tandem bicycle pass phrase"))
    assert any(DEPOT_FACT in p for p in _recalled(second, "spare key Oslo depot"))
    outside = new_conversation(owner)
    assert _recalled(outside, "spare key Oslo depot") == []
    stranger = new_conversation()
    assert _recalled(stranger, "spare key Oslo depot") == []
    # The sidebar's search finds conversations: the project's files are left out.
    hits = search(query="spare key Oslo depot", owner_id=owner.pk)
    assert not [h for h in hits if h.document.project_id], hits


def a_removed_project_file_is_no_longer_recalled_and_a_rebuild_keeps_the_rest() -> None:
    from chat.projects import services as project_services

    project = _project_with_files(
        ("handbook.txt", _handbook()), ("rota.txt", b"The canteen rota changes on Mondays.")
    )
    conversation = services.conversation_create(owner=project.owner, project_id=project.pk)
    assert any(DEPOT_FACT in p for p in _recalled(conversation, "spare key Oslo depot"))
    handbook = project.files.get(original_name="handbook.txt")
    project_services.project_file_delete(attachment=handbook)
    assert not [p for p in _recalled(conversation, "spare key Oslo depot") if DEPOT_FACT in p]
    SearchDocument.objects.filter(project=project).delete()
    assert not [p for p in _recalled(conversation, "canteen rota Mondays") if "Mondays" in p]
    assert search_index.rebuild_project_files(projects=[project]) == 1
    (rota,) = [p for p in _recalled(conversation, "canteen rota Mondays") if "Mondays" in p]
    assert rota.startswith("project file rota.txt, page 1"), rota


def a_project_file_with_nul_bytes_past_its_start_is_stored_and_recalled() -> None:
    """NUL bytes are sniffed in a file's first 64 KiB only; one further on must not reach
    the database (PostgreSQL's text and jsonb cannot hold it)."""
    data = b"The plover nests on shingle. " * 2_500 + b"\x00The curlew probes\x00 the mud."
    project = _project_with_files(("shore.txt", data))
    conversation = services.conversation_create(owner=project.owner, project_id=project.pk)
    (found,) = [p for p in _recalled(conversation, "curlew probes") if "curlew" in p]
    assert "The curlew probes the mud." in found and "\x00" not in found, found


ALL = [
    a_stated_value_comes_first_among_20_filler_mentions_of_its_key,
    a_value_given_in_reply_to_a_question_is_quoted_with_the_question,
    the_quote_is_centred_on_the_match_that_states_the_value,
    a_hit_is_named_by_its_date_and_place_in_the_chat,
    one_mention_in_a_long_paste_is_found_on_its_passage,
    a_table_row_is_found_by_its_column_name,
    german_compounds_are_found_by_their_parts,
    chinese_words_are_found_by_their_parts,
    a_detail_stated_once_is_not_pushed_out_by_repeats_of_its_key_word,
    every_word_and_a_prefix_for_the_search_box,
    query_syntax_is_never_interpreted,
    old_passage_with_all_terms_beats_newer_ones_with_one,
    whole_words_only,
    chinese_is_searchable,
    tool_results_are_searchable,
    retried_answers_and_other_users_are_never_returned,
    index_follows_edits_and_deletes,
    rebuild_recomputes_the_index,
    a_project_file_is_recalled_with_its_file_and_page,
    a_project_file_is_found_only_from_the_projects_own_conversations,
    a_removed_project_file_is_no_longer_recalled_and_a_rebuild_keeps_the_rest,
    a_project_file_with_nul_bytes_past_its_start_is_stored_and_recalled,
]

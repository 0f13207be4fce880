"""The offline model follows what it can of standing instructions: the answer's language
and a sign-off line (RJ.5)."""

from __future__ import annotations

import json

import pytest

from contextmgmt.core.instructions import with_instructions
from contextmgmt.core.messages import ChatMessage
from fimone.llm.offline.instructions import Followed, followed
from fimone.llm.offline.model import OfflineLLM
from fimone.llm.offline.phrases import PHRASES

SYSTEM = ChatMessage(role="system", content="You are a helpful assistant.")


def sent(instructions: str, question: str = "Is the printer on floor 3 fixed?"):
    return [*with_instructions(SYSTEM, instructions), ChatMessage(role="user", content=question)]


@pytest.mark.parametrize(
    ("instructions", "language"),
    [
        ("Answer in German.", "de"),
        ("Always reply only in English, please.", "en"),
        ("Antworte immer auf Deutsch.", "de"),
        ("Réponds en français.", "fr"),
        ("Responde siempre en español.", "es"),
        ("请用中文回答。", "zh"),
        ("用英文回答", "en"),
        ("Write your answers in Spanish and keep them short.", "es"),
        ("Keep answers short.", None),
    ],
)
def test_the_language_is_read_from_the_instructions_rj_5(instructions, language):
    assert followed(sent(instructions)).language == language


@pytest.mark.parametrize(
    ("instructions", "sign_off"),
    [
        ("End every answer with '— Your assistant'.", "— Your assistant"),
        ('Sign off with "Cheers, the help desk".', "Cheers, the help desk"),
        ("Sign off with Your assistant.", "Your assistant"),
        ("Beende jede Antwort mit „Dein Helpdesk“.", "Dein Helpdesk"),
        ("Termine chaque réponse par « L'équipe »", "L'équipe"),
        ("Termina cada respuesta con 'Saludos'.", "Saludos"),
        ("每个回答以“——你的助手”结尾。", "——你的助手"),
        ("Answer in German.", None),
    ],
)
def test_the_sign_off_is_read_from_the_instructions_rj_5(instructions, sign_off):
    assert followed(sent(instructions)).sign_off == sign_off


def test_no_instructions_no_change_and_the_conversations_own_win_rj_5():
    assert followed([SYSTEM, ChatMessage(role="user", content="Answer in German.")]) == Followed()
    both = (
        "## The project's instructions\nAnswer in German. End every answer with '— Projekt'.\n\n"
        "## This conversation's own instructions\nRéponds en français. Sign off with 'Merci'."
    )
    assert followed(sent(both)) == Followed(language="fr", sign_off="Merci")


@pytest.mark.parametrize("language", ["en", "de", "fr", "es", "zh"])
async def test_the_answer_is_in_the_language_asked_and_ends_with_the_sign_off_rj_5(language):
    names = {"en": "English", "de": "German", "fr": "French", "es": "Spanish", "zh": "Chinese"}
    rules = f"Answer in {names[language]}. End every answer with '— Your assistant'."
    result = await OfflineLLM().chat(sent(rules, "Is the printer on floor 3 fixed?"))
    answer = result.message.text()
    assert PHRASES["note"][language] in answer
    assert answer.endswith("\n\n— Your assistant")
    assert answer.count("— Your assistant") == 1


async def test_plans_verdicts_and_summaries_are_left_as_they_are_rj_5():
    """Only answers follow the instructions: a plan stays JSON."""
    plan_call = [
        *with_instructions(
            ChatMessage(role="system", content="Reply with a JSON plan."),
            "End every answer with '— Your assistant'.",
        ),
        ChatMessage(role="user", content="Compare 3*7 and 4*5."),
    ]
    result = await OfflineLLM().chat(plan_call)
    assert "steps" in json.loads(result.message.text())

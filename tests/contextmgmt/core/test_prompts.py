"""COMPACT_PROMPTS (SPEC R3.5, R3.6)."""

import pytest

from contextmgmt.core.prompts import COMPACT_PROMPTS, compact_prompt, hint_of

HINTS = ["react_iteration", "planner_input", "step_dependency", "general"]


def test_exactly_the_four_hints_r3_5():
    assert sorted(COMPACT_PROMPTS) == sorted(HINTS)


@pytest.mark.parametrize("hint", HINTS)
def test_prompt_starts_with_the_compactor_sentence(hint):
    # The offline model recognises compaction calls by this exact opening sentence.
    assert COMPACT_PROMPTS[hint].startswith("You are fimone's context compactor.")


@pytest.mark.parametrize("hint", HINTS)
def test_prompt_ends_with_the_same_language_instruction_r3_6(hint):
    last_paragraph = COMPACT_PROMPTS[hint].rsplit("\n\n", 1)[1]
    assert last_paragraph.startswith("Write the summary in the same language as the conversation")


@pytest.mark.parametrize("hint", HINTS)
def test_prompt_asks_for_exact_numbers_names_identifiers_paths_urls(hint):
    prompt = COMPACT_PROMPTS[hint]
    for word in ("number", "name", "identifier", "file path", "URL"):
        assert word in prompt


@pytest.mark.parametrize(
    ("hint", "keep", "drop"),
    [
        ("react_iteration", "recent chain of reasoning", "failed retries"),
        ("planner_input", "intent evolved", "greetings"),
        ("step_dependency", "key data, numbers", "the reasoning process"),
        ("general", "key facts", "greetings and filler"),
    ],
)
def test_prompt_keeps_and_drops_what_its_caller_needs_r3_5(hint, keep, drop):
    keep_part, drop_part = COMPACT_PROMPTS[hint].split("\n\nDrop: ")
    assert keep in keep_part.split("\n\nKeep: ")[1]
    assert drop in drop_part


@pytest.mark.parametrize("hint", sorted(COMPACT_PROMPTS))
def test_the_sent_prompt_tells_the_cap_and_still_ends_with_the_language_rule_rf_2(hint):
    sent = compact_prompt(hint, 300)
    assert sent.startswith(COMPACT_PROMPTS[hint].rsplit("\n\n", 1)[0])
    assert "at most 300 tokens" in sent
    assert sent.endswith(COMPACT_PROMPTS[hint].rsplit("\n\n", 1)[1])
    assert hint_of(sent) == hint_of(COMPACT_PROMPTS[hint]) == hint
    assert compact_prompt(hint) == COMPACT_PROMPTS[hint]

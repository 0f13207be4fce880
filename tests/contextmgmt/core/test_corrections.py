"""Corrections win (contextmgmt/core/corrections.py and the fact check): in English, German
and Chinese the newest value is the current one; the check counts a replaced value as kept
when its replacement is and never puts the old value back as if it were current."""

from __future__ import annotations

import pytest

from contextmgmt.core.corrections import superseded
from contextmgmt.core.factcheck import check_key_facts
from contextmgmt.core.factscan import normalise
from contextmgmt.core.prompts import COMPACT_PROMPTS

# (earlier messages, the correction, the old value, the new value)
CORRECTIONS = [
    (
        ["The marketing budget is 38,000 for the fair."],
        "The budget is 41,500, not 38,000.",
        "38,000",
        "41,500",
    ),
    (
        ["The interpreter costs ¥3,900 per day."],
        "Update: the interpreter is ¥4,600 per day, not ¥3,900.",
        "¥3,900",
        "¥4,600",
    ),
    (
        ["The supplier contract number is SUP-2027-117."],
        "Correction: the supplier contract number is SUP-2027-118.",
        "SUP-2027-117",
        "SUP-2027-118",
    ),
    (
        ["Das Abschlussgespräch ist am Dienstag."],
        "Das Abschlussgespräch ist nicht am Dienstag, sondern am Mittwoch.",
        "Dienstag",
        "Mittwoch",
    ),
    (
        ["Das Lager ist in der Hauptstraße 3, 80331 München."],
        "Korrektur: das Lager ist in der Hauptstraße 5, 80331 München.",
        "Hauptstraße 3, 80331 München",
        "Hauptstraße 5, 80331 München",
    ),
    (
        ["Der Hausmeister: (030) 2345 6788."],
        "Neue Nummer: der Hausmeister ist jetzt unter (030) 2345 6789 erreichbar.",
        "(030) 2345 6788",
        "(030) 2345 6789",
    ),
    (["展位号是 B1-05。"], "展位号改为 B2-17。", "B1-05", "B2-17"),
    (["每箱限重120公斤。"], "每箱限重改为160公斤。", "120公斤", "160公斤"),
    (
        ["撤展截止时间是2027年3月20日。"],
        "撤展截止时间改为2027年3月21日。",
        "2027年3月20日",
        "2027年3月21日",
    ),
    (["搬家公司报价3.9万。"], "搬家公司的报价更新为4.5万。", "3.9万", "4.5万"),
]
FILLER = [
    "Can you summarise where we are with the rollout?",
    "Bei der Pressearbeit sehe ich keine Blocker.",
    "展会物流现在进展如何？",
]


@pytest.mark.parametrize(
    ("earlier", "correction", "old", "new"), CORRECTIONS, ids=[c[2] for c in CORRECTIONS]
)
def test_the_newest_value_replaces_the_old(earlier, correction, old, new):
    replaced = superseded([*earlier, *FILLER, correction])
    assert replaced.replacement(normalise(old)) == normalise(new)


@pytest.mark.parametrize(
    ("earlier", "correction", "old", "new"), CORRECTIONS, ids=[c[2] for c in CORRECTIONS]
)
def test_the_check_never_puts_the_old_value_back(earlier, correction, old, new):
    sources = [*earlier, *FILLER, correction]
    dropped_both = check_key_facts("We discussed the plan.", sources)
    assert new in dropped_both.appended
    assert old not in dropped_both.appended and old not in dropped_both.missing
    kept_new = check_key_facts(f"The current value is {new}.", sources)
    # The old value counts as kept: its replacement is.
    assert kept_new.missing == [] and kept_new.appended == []


def test_a_later_value_of_another_thing_replaces_nothing():
    sources = [
        "The supplier contract number is SUP-2027-117.",
        "The cleaning contract is SUP-2027-121.",
        "Das Meeting ist am Dienstag.",
        "Der Aufbau ist nicht schwierig, er beginnt am Mittwoch.",
    ]
    assert superseded(sources).by == {}


def test_a_plain_not_needs_its_old_value_next_to_it():
    sources = ["The upstream timeout is 30 s.", "The upstream timeout should be 45 s, not more."]
    assert superseded(sources).by == {}


def test_the_summariser_is_asked_to_keep_current_values_only():
    for prompt in COMPACT_PROMPTS.values():
        assert "keep only the newest value" in prompt
        assert "never state a replaced value as if it were current" in prompt

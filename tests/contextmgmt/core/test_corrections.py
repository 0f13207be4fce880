"""Corrections win (contextmgmt/core/corrections.py and the fact check): in English, German
and Chinese the newest value is the current one; the check counts a replaced value as kept
when its replacement is and never puts the old value back as if it were current."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# French, Spanish, Japanese and Russian, each correction phrase: (earlier, correction, old,
# new).
CORRECTIONS_FR_ES_JA_RU = [
    (
        ["La livraison est prévue le 12 décembre 2026."],
        "Correction : la livraison est le 14 décembre 2026 au lieu du 12 décembre 2026.",
        "12 décembre 2026",
        "14 décembre 2026",
    ),
    (["La livraison est prévue le 12."], "La livraison est le 14 au lieu du 12.", "12", "14"),
    (["Le devis est de 1 200,00 €."], "Le devis est désormais de 1 350,00 €.", "1 200,00 €",
     "1 350,00 €"),
    (
        ["El pago vence el 7 de diciembre de 2026."],
        "El pago vence el 9 de diciembre de 2026, en vez del 7 de diciembre de 2026.",
        "7 de diciembre de 2026",
        "9 de diciembre de 2026",
    ),
    (["La entrega es el 12."], "La entrega es el 14 y no el 12.", "12", "14"),
    (
        ["La inauguración es el miércoles."],
        "La inauguración no es el miércoles sino el jueves.",
        "miércoles",
        "jueves",
    ),
    (
        ["La oficina está en Calle Mayor 15, 28013 Madrid."],
        "Corrección: la oficina está en Calle Mayor 17, 28013 Madrid.",
        "Calle Mayor 15, 28013 Madrid",
        "Calle Mayor 17, 28013 Madrid",
    ),
    (
        ["納品は2026年12月12日です。"],
        "納品は2026年12月12日ではなく2026年12月14日です。",
        "2026年12月12日",
        "2026年12月14日",
    ),
    (["納品は12日です。"], "納品は12日ではなく14日に変更です。", "12日", "14日"),
    (
        ["注文番号はJP-20261207-0042です。"],
        "注文番号はJP-20261207-0043に変更になりました。",
        "JP-20261207-0042",
        "JP-20261207-0043",
    ),
    (
        ["Оплата до 7 декабря 2026."],
        "Оплата до 9 декабря 2026 вместо 7 декабря 2026.",
        "7 декабря 2026",
        "9 декабря 2026",
    ),
    (
        ["Сумма счёта 184 500,00 ₽."],
        "Поправка: сумма счёта 186 000,00 ₽.",
        "184 500,00 ₽",
        "186 000,00 ₽",
    ),
    (
        ["Заявка ТП-2026-0412."],
        "Заявка теперь ТП-2026-0415, а не ТП-2026-0412.",
        "ТП-2026-0412",
        "ТП-2026-0415",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("earlier", "correction", "old", "new"),
    CORRECTIONS_FR_ES_JA_RU,
    ids=[c[1][:40] for c in CORRECTIONS_FR_ES_JA_RU],
)
def test_corrections_in_french_spanish_japanese_russian_rf_11(earlier, correction, old, new):
    sources = [*earlier, *FILLER, correction]
    assert superseded(sources).replacement(normalise(old)) == normalise(new)
    dropped_both = check_key_facts("We discussed the plan.", sources)
    assert new in dropped_both.appended
    assert old not in dropped_both.appended and old not in dropped_both.missing


def test_an_old_value_only_a_bare_list_holds_is_never_put_back_rf_5():
    """A correction that names neither its old value nor a thing an earlier sentence
    names, while an earlier summary's bare list holds two values of its kind and shape:
    neither is put back as if current (the German/Chinese conversation's stale date)."""
    sources = [
        "Facts stated: 2027年3月15日; B2-17; 2027年3月20日; 41,500.",
        "撤展截止时间改为2027年3月21日。",
    ]
    checked = check_key_facts("Facts stated: 2027年3月15日; 2027年3月21日; B2-17; 41,500.", sources)
    assert "2027年3月20日" not in checked.appended
    assert checked.missing == []


def test_a_correction_is_matched_in_a_long_history_rs_3():
    """The index of earlier sentences finds the value a correction replaces among many
    sentences naming the same words."""
    sources = [f"The staging budget for team {i} is {1000 + i} EUR." for i in range(300)]
    sources.insert(150, "The warehouse door code is 4471.")
    sources.append("The warehouse door code is now 5582.")
    assert superseded(sources).replacement("4471") == "5582"


def test_rf_12_a_correction_reads_only_the_sources_naming_its_words(monkeypatch):
    """RF.12: a correction that does not name its old value is compared with the
    sentences sharing a word with it; the other sources' sentences are never split and
    read for their subjects (hundreds of messages, one correction)."""
    from contextmgmt.core import corrections

    corrections.clear_cache()
    read = []
    real = corrections._subject

    def counting(sentence, facts):
        read.append(sentence)
        return real(sentence, facts)

    monkeypatch.setattr(corrections, "_subject", counting)
    sources = [f"Shipment {i} left the port on day {i + 3}." for i in range(400)]
    sources.insert(200, "The warehouse door code is 4471.")
    sources.append("Correction: the warehouse door code is 5582.")
    assert superseded(sources).replacement("4471") == "5582"
    assert len(read) < 20


_WORDS = ["Lager", "LAGER", "lagerhalle", "Straße", "STRASSE", "strasse", "budget", "Budget"]
_PIECES = [*_WORDS, "展位号", "展位", "code", " ", ". ", "。", "\n", "4471", "B2-17", "is", "改为"]


@settings(max_examples=150, deadline=None)
@given(
    sources=st.lists(
        st.lists(st.sampled_from(_PIECES), max_size=14).map("".join), min_size=1, max_size=12
    ),
    subject=st.sets(st.sampled_from(["lager", "strasse", "budget", "展位", "位号", "code"])),
    limit=st.integers(1, 4),
)
def test_rf_12_the_earlier_sentences_naming_a_word_are_the_latest_of_all(sources, subject, limit):
    """RF.12: the sentences a correction is compared with, found from the sources'
    case-folded text, are the latest ``LATEST_PER_WORD`` of all sentences up to its source
    whose subject names each of its words (the index of every sentence: the reference)."""
    from contextmgmt.core import corrections
    from contextmgmt.core.factscan import scans_of

    scans = scans_of(sources)
    every = [
        (source, number, entry[2])
        for source, (text, scan) in enumerate(zip(sources, scans, strict=True))
        for number, entry in enumerate(corrections._subjects_of(text, scan.placed))
    ]
    earlier = corrections._Earlier(sources, scans)
    kept = corrections.LATEST_PER_WORD
    corrections.LATEST_PER_WORD = limit
    try:
        for index in range(len(sources)):
            expected = set()
            for word in subject:
                naming = [(s, n) for s, n, words in every if s <= index and word in words]
                expected.update(naming[-limit:])
            assert earlier.candidates(set(subject), index) == sorted(expected)
    finally:
        corrections.LATEST_PER_WORD = kept

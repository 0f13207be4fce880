"""The offline summariser and the facts of the three languages: their facts count, a
pasted export's rows count as a log's lines do, and a replaced value is never presented as
current (fimone/llm/offline/facts.py)."""

from __future__ import annotations

import random

from fimone.llm.offline.text import extractive_summary


def _export(rows: int, note: str = "") -> str:
    rng = random.Random(9)
    lines = [
        f"FX-{rng.randint(2026, 2027)}-{rng.randint(1, 9999):04d};"
        f"SN{rng.randint(10**7, 10**8 - 1)};"
        f"Lager {rng.choice('ABCDEF')}{rng.randint(1, 60)};{rng.randint(1, 400)} Stk;"
        f"{rng.choice(['ok', 'prüfen', 'defekt'])}"
        for _ in range(rows)
    ]
    if note:
        lines.insert(rows * 2 // 3, note)
    return "\n".join(lines)


def test_stated_facts_in_three_languages_outrank_an_exports_rows():
    stated = [
        "Das Angebot für den Messestand liegt bei 12.380,50 € netto.",
        "Die Lieferadresse ist Musterstraße 12, 10115 Berlin.",
        "样品请寄到北京市朝阳区建国路88号。",
        "展台搭建费是3万5千元。",
        "The press breakfast is on March 18, 2027.",
        "王芳的手机号是 +86 138 0013 8000。",
    ]
    turns = []
    for i, sentence in enumerate(stated):
        turns.append(f"user: {sentence}")
        turns.append("assistant: Notiert.")
        if i == 2:
            turns.append(
                "user: Hier der Lagerexport:\n" + _export(300, "Notiz: Code 4471 beim Pförtner")
            )
    summary = extractive_summary("\n\n".join(turns), max_tokens=220)
    for fact in (
        "12.380,50 €",
        "Musterstraße 12, 10115 Berlin",
        "北京市朝阳区建国路88号",
        "3万5千元",
        "March 18, 2027",
        "+86 138 0013 8000",
    ):
        assert fact in summary, summary
    # The one row of another shape among the export's rows is not noise.
    assert "Code 4471" in summary, summary


def test_a_replaced_value_is_not_presented_as_current():
    transcript = "\n\n".join(
        [
            "user: 展位号是 B1-05。",
            "assistant: 好的，已记录。",
            "user: Das Abschlussgespräch ist am Dienstag.",
            "assistant: Notiert.",
            "system: [Conversation summary]\n- User: The marketing budget is 38,000.\n"
            "Key facts: 38,000; B1-05; DE89 3704 0044 0532 0130 00",
            "user: 展位号改为 B2-17。",
            "user: Das Abschlussgespräch ist nicht am Dienstag, sondern am Mittwoch.",
            "user: The budget is 41,500, not 38,000.",
        ]
    )
    summary = extractive_summary(transcript, max_tokens=400)
    assert "B2-17" in summary and "Mittwoch" in summary and "41,500" in summary
    assert "B1-05" not in summary
    assert "DE89 3704 0044 0532 0130 00" in summary  # the rest of the Key facts line stays
    for line in summary.splitlines():
        assert "am Dienstag." not in line
        assert "38,000" not in line or "41,500" in line, line


def test_an_earlier_summarys_export_rows_do_not_crowd_out_stated_facts():
    """Rows an earlier summary kept from an export are still machine output when it is
    folded: at most two of them stay, the facts stated since all do."""
    rows = "\n".join(f"- User: {line}" for line in _export(40).split("\n"))
    stated = [
        "Die Besucherzahl der letzten Messe war 1.234.567.",
        "Der Aufbau beginnt am 14.03.2027.",
        "The press breakfast is on March 18, 2027.",
        "每天的翻译费是2800元。",
        "Wir drucken 2.500 Stück Flyer.",
    ]
    transcript = "\n\n".join(
        [f"system: [Conversation summary]\n{rows}", *(f"user: {s}" for s in stated)]
    )
    summary = extractive_summary(transcript, max_tokens=300)
    for fact in ("1.234.567", "14.03.2027", "March 18, 2027", "2800元", "2.500 Stück"):
        assert fact in summary, summary
    assert summary.count("FX-") <= 2, summary

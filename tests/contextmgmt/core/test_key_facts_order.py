"""What the Key-facts line puts first: what the user stated in words outranks what sits in
pastes and tool output; a summary that folds an older one is checked against the older
one's facts too."""

from __future__ import annotations

import random
from collections import Counter
from math import log2

from hypothesis import given, settings
from hypothesis import strategies as st

from contextmgmt.core.factcheck import _ranked_order, check_key_facts
from contextmgmt.core.factpatterns import PRIORITY
from contextmgmt.core.messages import SUMMARY_PREFIX, ChatMessage
from contextmgmt.core.summarise import summarise_rounds
from tests.support.fake_llm import FakeLLM

from .builders import assistant, user

_WORDS = (
    "Schraube Mutter Kabel Stecker Rahmen Platte Leiste Haken Dübel Scharnier Lampe Sockel "
    "Schiene Bügel Klemme Stange Rolle Gitter Deckel Griff Riegel Winkel Halter Fuß Band"
).split()


def _export(lines: int, seed: int = 4) -> str:
    """A pasted export whose rows differ in more than their digits (no log template)."""
    rng = random.Random(seed)
    return "\n".join(
        f"{rng.choice(_WORDS)} {rng.choice(_WORDS).lower()}: FX-2027-{rng.randint(1, 9999):04d}, "
        f"SN{rng.randint(10**7, 10**8 - 1)}"
        for _ in range(lines)
    )


def test_what_the_user_stated_outranks_a_pasted_export():
    stated = [
        "Das Angebot für den Messestand liegt bei 12.380,50 € netto.",
        "展位号是 B1-05，对接人是王芳。",
        "The freight booking is FX-2027-0415.",
    ]
    paste = "Hier der Lagerexport:\n" + _export(200)
    sources = [*stated, paste, "The export looks complete."]
    checked = check_key_facts(
        "The user shared an export.",
        sources,
        max_tokens=60,
        stated=[*stated, "Hier der Lagerexport:"],
    )
    assert set(checked.appended[:4]) == {"12.380,50 €", "B1-05", "王芳", "FX-2027-0415"}, (
        checked.appended
    )
    assert len(checked.appended) > 4  # room was left for the export's serial numbers


async def test_a_fold_keeps_what_the_older_summary_kept():
    older = ChatMessage(
        role="system",
        content=f"{SUMMARY_PREFIX}\n"
        "- The user booked booth B2-17; contact 王芳 (+86 138 0013 8000).\n"
        "Key facts: DE89 3704 0044 0532 0130 00; Musterstraße 12, 10115 Berlin",
        metadata={"summarized_count": 40},
    )
    newer = [
        user("Die Kaution beträgt 1.250,00 EUR."),
        assistant("Notiert."),
        user("Der Aufbau beginnt am 14.03.2027."),
        assistant("Alles klar."),
    ]
    # A summariser that keeps the newer messages' facts only.
    llm = FakeLLM(default="Kaution 1.250,00 EUR; Aufbau am 14.03.2027.")
    outcome = await summarise_rounds([older, *newer], llm, max_summary_tokens=400)
    text = outcome.summary.text()
    for fact in (
        "B2-17",
        "王芳",
        "+86 138 0013 8000",
        "DE89 3704 0044 0532 0130 00",
        "Musterstraße 12, 10115 Berlin",
    ):
        assert fact in text, text


def _ranked_by_tuples(missing, scores, origins):
    """The ranking as one sort of a tuple per fact (the key the check ranks by)."""
    damp = {shape: 1.0 + log2(n) for shape, n in Counter(f[5] for f in missing).items()}
    ranked = sorted(
        (-scores[key] / damp[shape], -scores[key], origins[key], PRIORITY[kind], place)
        for place, (kind, _, key, _, _, shape) in enumerate(missing)
    )
    return [entry[-1] for entry in ranked]


@settings(max_examples=300, deadline=None)
@given(
    facts=st.lists(
        st.tuples(
            st.sampled_from(sorted(PRIORITY)),
            st.integers(0, 12),  # the key: few, so that scores tie
            st.sampled_from([b"0000", b"A-00", b"aaa"]),
            st.sampled_from([0.5, 1.0, 5.25, 6.0, 9.125, 10.0 / 3]),
            st.integers(0, 5),
        ),
        max_size=60,
        unique_by=lambda fact: fact[1],
    )
)
def test_rf12_the_missing_facts_rank_as_one_sort_of_their_full_key(facts):
    """RF.12: ranking the missing facts by one sort per part of the key gives the order of
    one sort of the whole key (ties on score, source and priority included)."""
    missing = [
        (kind, f"v{key}", f"k{key}", f"k{key}", 5, shape) for kind, key, shape, _, _ in facts
    ]
    scores = {f"k{key}": score for _, key, _, score, _ in facts}
    origins = {f"k{key}": origin for _, key, _, _, origin in facts}
    assert _ranked_order(missing, scores, origins) == _ranked_by_tuples(missing, scores, origins)

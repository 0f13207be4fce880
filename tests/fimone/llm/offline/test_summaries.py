"""The offline model's extractive summaries keep fact sentences over log noise (RF.5)."""

from contextmgmt.core.messages import SUMMARY_PREFIX, ChatMessage
from contextmgmt.core.prompts import compact_prompt
from contextmgmt.core.tokens import estimate_tokens
from fimone.llm.offline.model import OfflineLLM

PLANTED = [
    "user: The pallet for order ORD-58213 weighs 412.5 kg.",
    "user: Our staging config lives at /srv/app/conf/stage-eu.yaml.",
    "user: The dashboard is https://grafana.example.com/d/x7/latency?orgId=2.",
    "user: We must keep the retry budget under 4 attempts.",
    "user: Invoice INV-2024-0042 is due on 2026-04-30.",
    "user: The contract owner is Amelia Novak in Hamburg.",
    "user: 仓库的预算上限是每月 8000 元。",
    "user: We decided to ship the migration on Friday.",
]


def log(lines: int) -> str:
    return "\n".join(
        f"2026-03-{i % 28 + 1:02d}T10:{i % 60:02d}:00Z INFO worker-{i % 9} req={10_000 + i * 7}"
        f" from 10.0.{i % 250}.{i % 200 + 1} took {i * 3 % 900}ms status=200"
        for i in range(lines)
    )


def transcript() -> str:
    blocks = []
    for i, fact in enumerate(PLANTED):
        blocks.append(fact)
        blocks.append(f"assistant: I checked it again and the numbers look consistent, step {i}.")
        blocks.append(f"tool: {log(60)}")
    return "\n\n".join(blocks)


async def test_planted_facts_beat_log_lines_and_repeated_boilerplate_rf_5():
    messages = [
        ChatMessage(role="system", content=compact_prompt("general", 190)),
        ChatMessage(role="user", content=transcript()),
    ]
    summary = (await OfflineLLM().chat(messages, max_tokens=190)).message.text()
    assert estimate_tokens(summary) <= 190
    for fact in (
        "412.5 kg",
        "stage-eu.yaml",
        "orgId=2",
        "4 attempts",
        "INV-2024-0042",
        "2026-04-30",
        "Amelia Novak",
        "8000 元",
        "decided to ship",
    ):
        assert fact in summary, fact
    assert summary.count("INFO worker-") <= 2  # two lines show the log; the rest is noise


async def test_a_log_alone_still_gets_a_summary_from_its_lines():
    messages = [
        ChatMessage(role="system", content=compact_prompt("general", 120)),
        ChatMessage(role="user", content=f"tool: {log(40)}"),
    ]
    summary = (await OfflineLLM().chat(messages, max_tokens=120)).message.text()
    assert "worker-" in summary and estimate_tokens(summary) <= 120


def _log_line(i: int, level: str) -> str:
    return (
        f"2026-03-{i % 28 + 1:02d}T0{i % 10}:1{i % 6}:2{i % 10}Z {level} worker-{i % 9} "
        f"req={1000 + 37 * i} from 10.{i}.{2 * i}.{i % 200 + 1} took {10 + i}ms status=200"
    )


def test_log_lines_an_earlier_summary_kept_stay_log_lines_rf_5():
    """A summary that kept a few log lines, folded again, must not promote them above the
    facts: they are still one template repeated."""
    from fimone.llm.offline.text import extractive_summary

    lines = [f"- User: {_log_line(i, level)}" for i in range(8) for level in ("INFO", "WARN")]
    earlier = f"{SUMMARY_PREFIX}\n" + "\n".join(lines)
    transcript = (
        f"system: {earlier}\n"
        "user: The contract owner on their side is Amelia Novak.\n"
        "user: Jonas Berger is on call for the migration weekend.\n"
    )
    summary = extractive_summary(transcript, max_tokens=120)
    assert "Amelia Novak" in summary and "Jonas Berger" in summary
    assert summary.count("worker-") <= 4  # two lines of each template at most


def test_log_lines_spread_over_the_summaries_of_pieces_are_recognised_rf_5():
    """Each piece of one long log was summarised apart and kept two lines per template:
    folded together, the template shows across the pieces' summaries."""
    from fimone.llm.offline.text import extractive_summary

    pieces = [
        f"system: {SUMMARY_PREFIX}\n- User: {_log_line(2 * p, 'INFO')}\n"
        f"- User: {_log_line(2 * p + 1, 'INFO')}"
        for p in range(6)
    ]
    transcript = "\n".join(pieces) + "\nuser: Carlos Ortega from legal reviews the agreement.\n"
    summary = extractive_summary(transcript, max_tokens=90)
    assert "Carlos Ortega" in summary
    assert summary.count("worker-") <= 2


def test_key_facts_lines_of_an_export_give_way_to_the_users_facts_rf_8():
    """Each piece of a pasted export was summarised apart, and the check put back its
    serial numbers and prices in a Key facts line per piece: folded together, those lines
    (items of a few shapes, many times over) no longer outrank the sentences that state
    the user's own facts, while a Key facts line of one-of-a-kind facts still does."""
    from fimone.llm.offline.text import extractive_summary

    def export_line(piece: int) -> str:
        items = []
        for row in range(6):
            n = 7 * piece + row
            items += [f"FX-2026-{1000 + 37 * n}", f"SN{50000000 + 7919 * n}", f"{10 + n},{n:02d} €"]
        return "- Key facts: " + "; ".join(items)

    pieces = [f"system: {SUMMARY_PREFIX}\n{export_line(p)}" for p in range(5)]
    transcript = (
        "\n".join(pieces)
        + f"\nsystem: {SUMMARY_PREFIX}\n- Key facts: Dr. Katrin Vogel; B2-17; 2027年3月15日\n"
        + "user: Die Lieferung wiegt 4,8 t und kommt am Mittwoch.\n"
        + "user: Our VAT id is DE123456789, the booth fee 41,500.\n"
    )
    summary = extractive_summary(transcript, max_tokens=300)
    assert "4,8 t" in summary and "DE123456789" in summary
    assert "Dr. Katrin Vogel" in summary

"""How bench/fidelity.py's mixed-language conversations are built (not a benchmark itself).

A conversation is its facts (each stated once, by the user, or once in a pasted export or
an assistant's table), its corrections (an earlier value stated first, the fact's value
replacing it many turns later, in words of the conversation's languages), pastes of up to
20,000 characters (exports with serial numbers and near-duplicate ids, logs, tables) and
filler in English, German and Chinese. ``build`` lays them out over the turns.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Correction:
    old: str  # the value first stated, superseded later
    new: str  # the fact's value, the current one
    first: str  # the user's sentence stating the old value


@dataclass
class Conversation:
    name: str
    # (value that must survive, the sentence it is stated in, a key word recall is asked with)
    facts: list[tuple[str, str, str]]
    corrections: list[Correction] = field(default_factory=list)
    # (user text, assistant reply, whether the model calls a tool)
    turns: list[tuple[str, str, bool]] = field(default_factory=list)


FILLER_QUESTIONS = [
    "Can you summarise where we are with {t}?",
    "What are the open risks around {t}?",
    "Kannst du kurz zusammenfassen, wie es bei {t} steht?",
    "Was fehlt uns noch bei {t}?",
    "{t}现在进展如何？",
    "关于{t}还有什么需要注意的？",
    "Could you draft two sentences about {t} for the team chat?",
]
FILLER_ANSWERS = [
    "For {t}, things look steady: the owners are clear and the next check is in the weekly "
    "call. I would write the decision down once and link it from the plan.",
    "Bei {t} sehe ich aktuell keine Blocker. Wir sollten trotzdem die Verantwortlichen "
    "bestätigen und die Unterlagen aktuell halten.",
    "{t}目前进展顺利，主要风险在于各团队之间的协调。建议在周会上确认负责人和时间表。",
    "On {t}: nothing urgent. Keep the scope small and review after the first week.",
]


def export_paste(
    rng: random.Random, chars: int, prefix: str, note: str = "", avoid: tuple[str, ...] = ()
) -> str:
    """A pasted inventory export: serial numbers, near-duplicate ids, bins, counts; ``note``
    (a detail stated once) on one line two thirds of the way down. No line holds any of
    ``avoid`` (the facts' own values: a near-duplicate id is not the id)."""
    lines, size = [], 0
    statuses = ["ok", "ok", "prüfen", "defekt", "待检", "已发货"]
    while size < chars:
        line = (
            f"{prefix}-{rng.randint(2026, 2027)}-{rng.randint(1, 9999):04d};"
            f"SN{rng.randint(10**7, 10**8 - 1)};Lager {rng.choice('ABCDEF')}{rng.randint(1, 60)};"
            f"{rng.randint(1, 400)} Stk;{rng.choice(statuses)};"
            f"{rng.randint(1, 99)},{rng.randint(0, 99):02d} €"
        )
        if any(value in line for value in avoid):
            continue
        lines.append(line)
        size += len(line) + 1
    if note:
        lines.insert(len(lines) * 2 // 3, note)
    return "\n".join(lines)


def log_paste(rng: random.Random, chars: int) -> str:
    lines, size = [], 0
    while size < chars:
        line = (
            f"2027-01-{rng.randint(1, 28):02d} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
            f":{rng.randint(0, 59):02d} [{rng.choice(['INFO', 'WARN', 'INFO'])}] 订单 "
            f"ORD-{rng.randint(100000, 999999)} 状态更新 user={rng.randint(1, 9999)} "
            f"耗时 {rng.randint(1, 900)}ms"
        )
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def table_answer(rng: random.Random, rows: int, header: str, row, chosen: str) -> str:
    """An assistant's table answer of ``rows`` rows, ``chosen`` (a row) among them."""
    body = [row(rng, i) for i in range(rows)]
    body.insert(rows * 3 // 4, chosen)
    columns = header.count("|") - 1
    return "\n".join([header, "|" + "---|" * columns, *body])


def build(
    conversation: Conversation,
    *,
    topics: list[str],
    pastes: dict[int, str],
    tables: dict[int, tuple[str, str]],
    count: int = 200,
    seed: int = 5,
) -> list[tuple[str, str, bool]]:
    """The turns: facts spread over the conversation, each correction's first value at
    least forty turns before its fact, pastes and table answers at their turns, filler
    around them; a tool call every tenth turn."""
    rng = random.Random(seed)
    corrected = {c.new: c for c in conversation.corrections}
    plain = [s for value, s, _ in conversation.facts if s and value not in corrected]
    later = [s for value, s, _ in conversation.facts if s and value in corrected]
    # Corrected facts in the last two thirds, so that their first values fit before them.
    statements = plain[: len(plain) // 3]
    rest = plain[len(plain) // 3 :]
    every = max(1, len(rest) // max(1, len(later)))
    for i, sentence in enumerate(later):
        statements.extend(rest[i * every : (i + 1) * every])
        statements.append(sentence)
    statements.extend(rest[len(later) * every :])
    busy = set(pastes) | set(tables)
    free = [t for t in range(1, count - 4) if t not in busy]
    step = len(free) / len(statements)
    fact_turns = {free[int(i * step)]: s for i, s in enumerate(statements)}
    first_turns: dict[int, str] = {}
    for turn, sentence in sorted(fact_turns.items()):
        for value, stated, _ in conversation.facts:
            if stated == sentence and value in corrected:
                options = [t for t in free if t < turn - 40 and t not in fact_turns]
                options = [t for t in options if t not in first_turns]
                if options:
                    first_turns[rng.choice(options)] = corrected[value].first
    missing = [c for c in conversation.corrections if c.first not in first_turns.values()]
    assert not missing, f"no room for the first values of {missing}"
    out = []
    for turn in range(count):
        topic = rng.choice(topics)
        if turn in fact_turns:
            user = fact_turns[turn]
            reply = rng.choice(["Noted.", "Notiert.", "好的，已记录。", "Got it."])
        elif turn in first_turns:
            user = first_turns[turn]
            reply = rng.choice(["Noted.", "Alles klar.", "收到。"])
        elif turn in pastes:
            user, reply = pastes[turn], "The export looks complete; a few items need checking."
        elif turn in tables:
            user, reply = tables[turn]
        else:
            user = rng.choice(FILLER_QUESTIONS).format(t=topic)
            reply = rng.choice(FILLER_ANSWERS).format(t=topic)
        out.append((user, reply, turn % 10 == 3))
    return out

"""A deterministic mixed conversation for the compaction benches (not a benchmark itself).

User requests that state facts (amounts with units, order ids, URLs, paths, dates, names,
Chinese values), assistant answers, tool rounds whose results are log excerpts full of
timestamps, IPs and counters, and now and then a pasted log of several thousand characters.
``languages="fr-es-ja-ru"``: the same shapes, the requests in French, Spanish, Japanese and
Russian (their dates, amounts with spaces as group separators, addresses, names, Cyrillic
and Japanese ids, and corrections in those languages).
"""

from __future__ import annotations

import json
import random

from contextmgmt.core.messages import ChatMessage, ToolCall

_NAMES = ["Amelia Novak", "Jonas Berger", "Priya Raman", "李明", "Carlos Ortega", "Mei Tanaka"]
_CITIES = ["Lisbon", "Hamburg", "Osaka", "Toronto", "成都", "Nairobi"]
_ZH = ["预算上限是每月八千元", "交付日期定在周五", "请用中文回复", "仓库在上海浦东"]


def _log_line(rng: random.Random, i: int) -> str:
    level = rng.choice(["INFO", "INFO", "INFO", "WARN", "DEBUG"])
    ip = f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
    return (
        f"2026-03-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
        f"{rng.randint(0, 59):02d}Z {level} worker-{rng.randint(1, 9)} "
        f"req={rng.randint(1000, 99999)}"
        f" from {ip} took {rng.randint(1, 900)}ms status={rng.choice([200, 200, 204, 404, 500])}"
        f" seq={i}"
    )


def pasted_log(rng: random.Random, chars: int) -> str:
    lines: list[str] = []
    size = 0
    i = 0
    while size < chars:
        line = _log_line(rng, i)
        lines.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(lines)


def _user(rng: random.Random, turn: int) -> str:
    kind = turn % 6
    name = rng.choice(_NAMES)
    if kind == 0:
        return (
            f"Order ORD-{40000 + turn * 37} for {name} weighs {rng.randint(2, 90)}.{turn % 10} kg;"
            f" ship it to {rng.choice(_CITIES)} before 2026-0{turn % 9 + 1}-{turn % 27 + 1:02d}."
        )
    if kind == 1:
        return (
            f"The staging config lives at /srv/app/conf/stage-{turn}.yaml and the dashboard is "
            f"https://grafana.example.com/d/{turn:04x}/latency?orgId=2. Can you check it?"
        )
    if kind == 2:
        return f"{rng.choice(_ZH)}，编号 ZH-{turn:05d}，金额 {turn * 13} 元。"
    if kind == 3:
        return (
            f"We decided the retry budget must stay under {turn % 7 + 2} attempts and the "
            f"timeout at {turn * 3 % 90 + 10} s. {name} approved it."
        )
    if kind == 4:
        return "Thanks, that helps. What should we look at next?"
    return f"Here is the log from worker-{turn % 9}:\n" + pasted_log(rng, rng.randint(600, 2500))


_FR_ES_JA_RU = [
    "La livraison {n} part le {d} décembre 2026 au lieu du {d2} ; montant 1 {k:03d},50 €.",
    "Le devis de Mme Claire Dubois pour le 12 rue de la Paix, 75002 Paris est de {k} 400 €.",
    "El pedido PED-{n} llega el {d} de diciembre de 2026, no el {d2}; importe {k}.250,00 €.",
    "La oficina de Sr. Javier Ortega está en Calle Mayor {d}, 28013 Madrid.",
    "注文番号はJP-2026{n:04d}-0042です。納品は2026年12月{d}日ではなく{d2}日に変更。",
    "担当は山田太郎さんです。住所は東京都千代田区丸の内{d}-9-2、金額は{k}万円。",
    "Счёт СЧ-{n} на {k} 500,00 ₽ оплатить до {d} декабря 2026 г. вместо {d2} декабря.",
    "Менеджер Иван Петров, адрес: г. Москва, ул. Тверская, д. {d}; заявка ТП-{n}.",
]


def _user_fr_es_ja_ru(rng: random.Random, turn: int) -> str:
    kind = turn % 6
    if kind in (0, 2, 3):
        template = rng.choice(_FR_ES_JA_RU)
        day = turn % 27 + 1
        return template.format(n=40000 + turn * 37, d=day, d2=day % 27 + 2, k=turn % 90 + 10)
    return _user(rng, turn)


MIXES = ("en-zh", "fr-es-ja-ru", "de-en-zh")


def _fair_turns(count: int) -> list[tuple[str, str]]:
    """bench/fidelity.py's trade-fair conversation (German, English and Chinese, with
    corrections and pasted exports), repeated as needed."""
    from _fidelity_fair import conversation  # bench/ is on the path of every bench

    turns = [(user, reply) for user, reply, _ in conversation(200).turns]
    return [turns[i % len(turns)] for i in range(count)]


def _answer(rng: random.Random, turn: int) -> str:
    return (
        f"I looked at step {turn}: the numbers are consistent, latency p95 is "
        f"{rng.randint(80, 400)} ms and error rate {rng.randint(0, 30) / 10}%. "
        "Next I would compare it with last week's baseline and confirm the owner."
    )


def mixed_conversation(
    count: int = 500, *, seed: int = 7, languages: str = "en-zh"
) -> list[ChatMessage]:
    """``count`` messages: system prompt, then user / assistant turns and tool rounds."""
    rng = random.Random(seed)
    user = _user_fr_es_ja_ru if languages == "fr-es-ja-ru" else _user
    if languages == "de-en-zh":
        fair = _fair_turns(count)
        user = lambda rng, turn: fair[turn][0]  # noqa: E731
    msgs = [ChatMessage(role="system", content="You are a helpful operations assistant.")]
    turn = 0
    while len(msgs) < count:
        turn += 1
        msgs.append(ChatMessage(role="user", content=user(rng, turn)))
        if turn % 3 == 0 and len(msgs) + 3 <= count:
            cid = f"call_{turn}"
            args = json.dumps({"query": f"latency worker-{turn % 9}", "limit": 50})
            msgs.append(
                ChatMessage(
                    role="assistant",
                    content=None,
                    tool_calls=[ToolCall(id=cid, name="search_logs", arguments=args)],
                )
            )
            msgs.append(ChatMessage(role="tool", tool_call_id=cid, content=pasted_log(rng, 1200)))
        answer = fair[turn][1] if languages == "de-en-zh" else _answer(rng, turn)
        msgs.append(ChatMessage(role="assistant", content=answer))
    msgs = msgs[:count]
    while msgs[-1].role != "user" and len(msgs) > 2:  # end on a user turn, like a request
        msgs.pop()
    msgs[-1].pinned = True
    return msgs

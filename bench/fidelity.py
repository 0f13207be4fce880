"""Context fidelity: which of 50 facts, each stated once, reach the model 200 turns later.

    .venv/bin/python bench/fidelity.py [--turns 200] [--budgets 8000 24000]
        [--conversations ops fair move]

Five long conversations — ``ops`` (bench/_fidelity_script.py: facts with units, ids, URLs,
paths, names, dates, Chinese values; pasted logs up to 20,000 characters; tool rounds),
``fair`` and ``move`` (bench/_fidelity_fair.py, bench/_fidelity_move.py: English, German
and Chinese mixed; amounts in each language's notation, IBAN/BIC, phone numbers, postal
addresses, dates, CJK amounts, names; corrections of earlier values; exports of 20,000
characters with one note in them, an assistant's table, near-duplicate ids), ``salon``
(bench/_fidelity_salon.py: French and Spanish) and ``export``
(bench/_fidelity_export.py: Russian and Japanese), with their dates, amounts with spaces as
group separators, addresses, names, Cyrillic and Japanese ids and corrections — are each
replayed turn by turn through the real run path — a websocket per conversation, the run pipeline,
DbMemory with persisted summaries, the engine's ContextGuard — with a scripted main model
(it answers each turn with the script's reply) and, as the compaction model, one of:

- keeps-all: a scripted summariser that keeps every fact it is shown;
- offline: fimone's built-in offline model (extractive summaries);
- lossy: a summariser that keeps only the first sentence it is shown.

Printed per budget and summariser: facts present in the context the main model receives
on the last turn; summariser calls per kind (load-time history / in-loop guard); the
largest summariser reply against its ``max_tokens`` and replies over it; guard
compactions on the first call of a run (right after a load that fitted); superseded
values presented as current (an earlier value a correction replaced, in a summary's
sentence or Key-facts item that does not give the new value or say that it was replaced,
with no message after the summary giving the new value);
and, once per budget, facts the ``recall`` tool finds by one key word. At the end, the
worst of each figure over conversations and budgets.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import _fidelity_export  # noqa: E402
import _fidelity_fair  # noqa: E402
import _fidelity_move  # noqa: E402
import _fidelity_salon  # noqa: E402
from _django import setup_django  # noqa: E402
from _fidelity_build import Conversation  # noqa: E402
from _fidelity_script import FACTS, turns  # noqa: E402


def conversations(count: int) -> dict[str, Conversation]:
    ops = Conversation("ops", FACTS, [], turns(count))
    return {
        "ops": ops,
        "fair": _fidelity_fair.conversation(count),
        "move": _fidelity_move.conversation(count),
        "salon": _fidelity_salon.conversation(count),
        "export": _fidelity_export.conversation(count),
    }


# --- the models ---------------------------------------------------------------------------


class ScriptedMain:
    """The main model: answers each turn with the script's reply; a tool turn first calls
    the calculator. Records what it receives on the first call of each run."""

    model_name = "scripted-main"
    supports_vision = False

    def __init__(self, script: list[tuple[str, str, bool]]) -> None:
        self.replies = {user: (reply, tool) for user, reply, tool in script}
        self.first_calls: list[list] = []

    def _reply(self, messages):
        from contextmgmt.core.messages import ChatMessage, ToolCall

        last_user = max(i for i, m in enumerate(messages) if m.role == "user")
        query = messages[last_user].text()
        answered = any(m.role == "tool" for m in messages[last_user + 1 :])
        if not answered and not any(m.role == "assistant" for m in messages[last_user + 1 :]):
            self.first_calls.append(list(messages))
        reply, tool = self.replies.get(query, ("Everything is noted.", False))
        if tool and not answered:
            call = ToolCall(
                id=f"c{len(self.first_calls)}",
                name="calculator",
                arguments=json.dumps({"expression": "6*7"}),
            )
            return ChatMessage(role="assistant", content=None, tool_calls=[call])
        return ChatMessage(role="assistant", content=reply)

    async def chat(self, messages, *, tools=None, **opts):
        from contextmgmt.core.llm import LLMResult, Usage
        from contextmgmt.core.tokens import estimate_messages_tokens

        await asyncio.sleep(0)
        reply = self._reply(messages)
        return LLMResult(reply, Usage(estimate_messages_tokens(messages), 20))

    async def stream_chat(self, messages, *, tools=None, **opts):
        from contextmgmt.core.llm import StreamChunk, Usage

        reply = self._reply(messages)
        yield StreamChunk(text=reply.text())
        yield StreamChunk(tool_calls=reply.tool_calls, usage=Usage(100, 20), finish_reason="stop")


class KeepsAll:
    """Keeps every planted fact it is shown, and nothing else; of a corrected value, the
    current one only (the earlier value while its correction is not in what it is shown)."""

    model_name = "keeps-all"

    def __init__(self, conversation: Conversation) -> None:
        self.values = [value for value, _, _ in conversation.facts]
        self.corrections = conversation.corrections

    async def chat(self, messages, *, tools=None, **opts):
        from contextmgmt.core.llm import LLMResult, Usage
        from contextmgmt.core.messages import ChatMessage

        seen = messages[-1].text()
        kept = [v for v in self.values if v in seen]
        kept += [c.old for c in self.corrections if c.old in seen and c.new not in seen]
        text = "Facts stated: " + "; ".join(kept) + "." if kept else "Nothing of note."
        return LLMResult(ChatMessage(role="assistant", content=text), Usage(100, 20))


class Lossy:
    """Keeps only the first sentence it is shown."""

    model_name = "lossy"

    async def chat(self, messages, *, tools=None, **opts):
        from contextmgmt.core.llm import LLMResult, Usage
        from contextmgmt.core.messages import ChatMessage

        first = re.split(r"(?<=[.!?。])\s", messages[-1].text().strip(), maxsplit=1)[0]
        return LLMResult(ChatMessage(role="assistant", content=first[:300]), Usage(100, 20))


class Recording:
    """Wraps the compaction model: counts calls per kind and compares replies to the cap."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.model_name = getattr(inner, "model_name", "summariser")
        self.supports_vision = False
        self.calls: Counter[str] = Counter()
        self.largest = (0, 0)  # (reply tokens, its max_tokens)
        self.over_cap = 0

    async def chat(self, messages, *, tools=None, **opts):
        from contextmgmt.core.prompts import hint_of
        from contextmgmt.core.tokens import estimate_tokens

        kind = {"general": "history", "react_iteration": "guard"}.get(
            hint_of(messages[0].text()) or "", "other"
        )
        self.calls[kind] += 1
        result = await self.inner.chat(messages, tools=tools, **opts)
        cap = opts.get("max_tokens") or 0
        size = estimate_tokens(result.message.text())
        if size > self.largest[0]:
            self.largest = (size, cap)
        if cap and size > cap:
            self.over_cap += 1
        return result

    def stream_chat(self, messages, *, tools=None, **opts):
        return self.inner.stream_chat(messages, tools=tools, **opts)


# --- one replay ------------------------------------------------------------------------------


@dataclass
class Outcome:
    present: list[str] = field(default_factory=list)
    calls: Counter = field(default_factory=Counter)
    largest: tuple[int, int] = (0, 0)
    over_cap: int = 0
    largest_in_context: int = 0
    guard_first_call: int = 0
    runs: int = 0
    seconds: float = 0.0
    conversation_id: object = None
    last_message_id: int = 0
    stale: list[str] = field(default_factory=list)  # superseded values presented as current
    context_text: str = ""


# Words that say a value was replaced, in the three languages.
_REPLACED = re.compile(
    r"\bnot\b|\binstead\b|\bwas\b|\bpreviously\b|\bsuperseded\b|\bcorrect|\bchanged\b"
    r"|\bnicht\b|\bstatt\b|\bfrüher\b|\bkorrigiert|\bgeändert|\büberholt|\bersetzt"
    r"|不是|改为|改成|原为|原来|已更正|更正|取代"
    r"|\bpas\b|\bau lieu\b|\bancien|\bcorrig|\bremplac|\bno\b|\ben vez\b|\bantes\b"
    r"|\bcorreg|\bcambi|\bне\b|\bвместо\b|\bраньше\b|\bисправ|\bизмен|ではなく|変更|訂正",
    re.IGNORECASE,
)


def presented_as_current(context, conversation: Conversation) -> list[str]:
    """Superseded values the context presents as the current ones: stated in a summary's
    sentence or Key-facts item without the new value and without a word saying that it
    was replaced, and no message after that summary (kept word for word) gives the new
    value. (A summary of the turns before a correction rightly says what was current
    then; the correction after it, word for word, tells the model what is current now.)"""
    stale = []
    for correction in conversation.corrections:
        for at, message in enumerate(context):
            if not message.is_summary:
                continue
            pieces = re.split(r"\n|; |(?<=[.!?。！？])\s*", message.text())
            unmarked = any(
                correction.old in piece
                and correction.new not in piece
                and not _REPLACED.search(piece)
                for piece in pieces
            )
            corrected_after = any(correction.new in later.text() for later in context[at + 1 :])
            if unmarked and not corrected_after:
                stale.append(correction.old)
                break
    return stale


async def replay(summariser, budget: int, script_of: Conversation, user) -> Outcome:
    from asgiref.sync import sync_to_async
    from channels.routing import URLRouter
    from channels.testing import WebsocketCommunicator

    from chat import services
    from chat.runs import deps
    from chat.runs.registry import registry
    from chat.sockets.routing import websocket_urlpatterns
    from contextmgmt.budget import Budget
    from contextmgmt.core.tokens import estimate_message_tokens

    script = script_of.turns
    values = [value for value, _, _ in script_of.facts]
    main = ScriptedMain(script)
    compactor = Recording(summariser)

    def budget_of(role: str) -> Budget:
        return Budget(
            role=role,
            context_size=budget + 4_000,
            max_output_tokens=4_000,
            usable_input_tokens=budget,
            source="env",
        )

    previous = deps.install(
        deps.current().replace(
            get_llm=lambda role: main if role == "main" else compactor, resolve_budget=budget_of
        )
    )
    conversation = await sync_to_async(services.conversation_create)(owner=user, title="fidelity")
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/chat/{conversation.id}/")
    comm.scope["user"] = user
    await comm.connect(timeout=30)
    out = Outcome(conversation_id=conversation.id)
    started = time.perf_counter()
    final = "Please list every number, id, name, date, address and decision we agreed on."
    try:
        for user_text in [u for u, _, _ in script] + [final]:
            await comm.send_json_to({"type": "message", "content": user_text, "mode": "react"})
            first_step_seen = False
            while True:
                event = await comm.receive_json_from(timeout=120)
                kind = event["type"]
                if kind == "step":
                    first_step_seen = True
                if kind == "compact" and event.get("scope") == "iteration" and not first_step_seen:
                    out.guard_first_call += 1
                if kind in ("done", "error"):
                    if kind == "error":
                        raise RuntimeError(f"run failed: {event}")
                    out.last_message_id = event.get("message_id") or out.last_message_id
                    break
            out.runs += 1
        await registry.wait_idle()
    finally:
        await comm.disconnect()
        deps.install(previous)
    out.seconds = time.perf_counter() - started
    context = main.first_calls[-1]
    text = "\n".join(m.text() for m in context)
    out.present = [v for v in values if v in text]
    out.stale = presented_as_current(context, script_of)
    out.context_text = "\n".join(f"[{m.role}] {m.text()[:3000]}" for m in context)
    out.largest_in_context = max(
        (estimate_message_tokens(m) for call in main.first_calls for m in call if m.is_summary),
        default=0,
    )
    out.calls, out.largest, out.over_cap = compactor.calls, compactor.largest, compactor.over_cap
    return out


async def recall_found(conversation_id, facts) -> list[str]:
    """Facts the recall tool finds when asked with one key word each."""
    from chat.runs.deps import make_tools

    tools = make_tools(conversation_id, before_id=10**12)
    found = []
    for value, _, keyword in facts:
        text = await tools.run("recall", json.dumps({"query": keyword}))
        if value in text:
            found.append(value)
    return found


async def main_async(args) -> None:
    from asgiref.sync import sync_to_async
    from django.contrib.auth import get_user_model

    from fimone.llm.offline.model import OfflineLLM

    user = await sync_to_async(get_user_model().objects.create_user)(
        username="fidelity", password="pw-fidelity-123!"
    )
    worst: dict[str, list[int]] = {"keeps-all": [], "offline": [], "lossy": [], "recall": []}
    stale_total = 0
    header = (
        f"{'budget':>7} {'summariser':<10} {'facts':>6} {'stale':>5} {'calls history/guard':>20} "
        f"{'largest reply/cap':>18} {'over cap':>8} {'summary in ctx':>14} "
        f"{'guard 1st call':>14} {'runs':>5} {'s':>5}"
    )
    available = conversations(args.turns)
    for name in args.conversations:
        conversation = available[name]
        facts = conversation.facts
        values = [value for value, _, _ in facts]
        pasted = sum(len(u) for u, _, _ in conversation.turns if len(u) > 2_000)
        print(
            f"conversation {name}: {len(conversation.turns)} turns, {len(facts)} facts stated "
            f"once, {len(conversation.corrections)} corrected, {pasted:,} characters of pastes; "
            "final context = the last turn's first call"
        )
        print(header)
        for budget in args.budgets:
            recall_conversation = None
            for label, model in (
                ("keeps-all", KeepsAll(conversation)),
                ("offline", OfflineLLM()),
                ("lossy", Lossy()),
            ):
                out = await replay(model, budget, conversation, user)
                recall_conversation = recall_conversation or out.conversation_id
                worst[label].append(len(out.present))
                if label != "lossy":
                    stale_total += len(out.stale)
                print(
                    f"{budget:>7,} {label:<10} {len(out.present):>3}/{len(facts)} "
                    f"{len(out.stale):>5} "
                    f"{out.calls['history']:>10}/{out.calls['guard']:<9} "
                    f"{out.largest[0]:>9}/{out.largest[1]:<8} {out.over_cap:>8} "
                    f"{out.largest_in_context:>14} {out.guard_first_call:>14} {out.runs:>5} "
                    f"{out.seconds:>5.0f}"
                )
                missing = [v for v in values if v not in out.present]
                if missing and args.verbose:
                    print("        missing:", "; ".join(missing))
                if out.stale and args.verbose:
                    print("        presented as current:", "; ".join(out.stale))
                if args.dump:
                    print(out.context_text)
            found = await recall_found(recall_conversation, facts)
            worst["recall"].append(len(found))
            print(
                f"{budget:>7,} recall finds {len(found)}/{len(facts)} facts by one key word"
                + (
                    f" (not: {'; '.join(v for v in values if v not in found)})"
                    if len(found) < len(facts)
                    else ""
                )
            )
    print(
        f"worst over {len(args.conversations)} conversations x {len(args.budgets)} budgets: "
        f"perfect summariser {min(worst['keeps-all'])}/50, "
        f"offline summariser {min(worst['offline'])}/50, recall {min(worst['recall'])}/50; "
        f"superseded values presented as current (keeps-all and offline): {stale_total}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--budgets", type=int, nargs="+", default=[8_000, 24_000])
    parser.add_argument(
        "--conversations", nargs="+", default=["ops", "fair", "move", "salon", "export"]
    )
    parser.add_argument("--dump", action="store_true", help="print each final context")
    parser.add_argument("--verbose", action="store_true", help="list the missing facts")
    args = parser.parse_args()
    setup_django(
        prefix="fimone-fidelity-",
        FIMONE_LOOP_MONITOR_INTERVAL_MS="0",
        FIMONE_WS_RATE_LIMIT="1000000",  # one user replays 200 turns quickly
    )
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()

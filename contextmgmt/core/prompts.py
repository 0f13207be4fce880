"""System prompts of the compaction LLM, one per hint.

Every prompt starts with ``COMPACTOR_INTRO`` (the offline model recognises a compaction call
by that exact sentence), says what to keep and what to drop for its caller, asks for
numbers, names, identifiers, file paths and URLs verbatim and only the newest of a value
that was corrected, and ends with the same-language instruction (CJK users otherwise get
English summaries).
"""

from __future__ import annotations

COMPACTOR_INTRO = "You are fimone's context compactor."

_EXACTNESS = (
    "Copy every number, amount, date, version, name, identifier, file path, URL and code "
    "symbol exactly as written; never round, paraphrase or invent one. If a detail is "
    "uncertain, leave it out rather than guess. When a later message corrects or changes a "
    "value, keep only the newest value, or mark the old one as replaced "
    '("budget: 41,500, not 38,000"); never state a replaced value as if it were current.'
)

_FORMAT = (
    "Write a compact summary as short plain statements or bullet points, with no preamble "
    "and no closing remarks. If the transcript contains an earlier conversation summary, "
    "fold its content into yours; do not mention that it was a summary."
)

_LANGUAGE = (
    "Write the summary in the same language as the conversation; if it mixes languages, "
    "use the language of the most recent user message."
)


def _prompt(caller: str, keep: str, drop: str) -> str:
    return "\n\n".join(
        (
            f"{COMPACTOR_INTRO} {caller}",
            f"Keep: {keep}",
            f"Drop: {drop}",
            _EXACTNESS,
            _FORMAT,
            _LANGUAGE,
        )
    )


COMPACT_PROMPTS: dict[str, str] = {
    "react_iteration": _prompt(
        "You receive the earlier part of an agent's reasoning-and-tool loop that no longer "
        "fits its context window. Summarise it so that the agent can continue the same task "
        "from where it stands.",
        "the user's current goal; the recent chain of reasoning and what it concluded; which "
        "tools were called with which essential arguments and the key data they returned; "
        "what has been tried and ruled out, stated once; for a page or document read in parts, "
        "which parts were read and the line saying how to read on, as written.",
        "old steps that later steps superseded; failed retries and their error noise beyond "
        "one line saying what failed and why; verbose tool output beyond the facts it "
        "established.",
    ),
    "planner_input": _prompt(
        "You receive a conversation history that a planner will read before breaking the "
        "user's latest request into steps. Summarise it so the planner understands what the "
        "user wants now and what was already settled.",
        "how the user's intent evolved and where it stands; decisions made and their "
        "reasons; constraints, preferences and requirements the user stated; results the "
        "plan can build on.",
        "dialogue detail; greetings and pleasantries; tool-call mechanics and raw tool "
        "output; the assistant's intermediate reasoning.",
    ),
    "step_dependency": _prompt(
        "You receive results that one step of a multi-step plan produced and a later step "
        "depends on. Summarise them as the input that later step needs.",
        "key data, numbers and measurements; conclusions and final answers; identifiers, "
        "names and references the next step must use.",
        "the reasoning process; failed attempts; verbose formatting, tables of irrelevant "
        "columns and boilerplate.",
    ),
    "general": _prompt(
        "You receive the older part of a conversation between a user and an assistant that "
        "no longer fits the context window. Summarise it so the conversation can continue "
        "without loss of substance.",
        "key facts; decisions and agreements; the user's requests and open questions; tool "
        "results that were relied on; for a page or document read in parts, which parts "
        "were read and the line saying how to read on.",
        "greetings and filler; redundant back-and-forth; repeated explanations.",
    ),
}


# Said to the summariser when the context has standing instructions (``instructions``): they
# go whole with every call, so a summary restating them would only pay for them twice.
INSTRUCTIONS_KEPT = (
    "The user's standing instructions are kept verbatim elsewhere in the context and sent "
    "with every request: do not summarise, restate or quote them; summarise only the "
    "transcript you are given."
)


def compact_prompt(hint: str, max_tokens: int | None = None, *, instructions: bool = False) -> str:
    """The system prompt of a compaction call: the hint's (``general`` for an unknown one),
    told its length cap when there is one and, when the context has standing instructions
    (``instructions``), that they are kept elsewhere — just before the closing language
    sentence."""
    base = COMPACT_PROMPTS.get(hint, COMPACT_PROMPTS["general"])
    if max_tokens is None and not instructions:
        return base
    extra = []
    if max_tokens is not None:
        extra.append(
            f"Length: at most {max_tokens} tokens (about {max(1, max_tokens * 3 // 4)} words); "
            "anything longer is cut off. When everything does not fit, keep the facts and "
            "decisions and drop the wording."
        )
    if instructions:
        extra.append(INSTRUCTIONS_KEPT)
    head = base[: -len(_LANGUAGE)]
    return head + "\n\n".join([*extra, _LANGUAGE])


def hint_of(system_prompt: str) -> str | None:
    """The hint whose prompt ``system_prompt`` is (with or without a length cap), or None."""
    for hint, prompt in COMPACT_PROMPTS.items():
        if system_prompt.startswith(prompt[: -len(_LANGUAGE)]):
            return hint
    return None

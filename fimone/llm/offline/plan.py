"""The offline model as planner ("JSON plan") and analyser ("JSON verdict").

Plans split the current request into 2–3 steps, the last depending on the others and a part
that builds on the previous one ("then … that result", "dann verdopple es", "再乘以 10")
depending on its step; verdicts say achieved when every step result is non-empty and not an
error and the answer (the last step's result) states every figure the request asks to
compute and every earlier step's value. The input shapes are
those of fimone.agent (``Current request:`` in an enriched query, ``### Step <id>:`` headers
in the analyser's input), read leniently.
"""

from __future__ import annotations

import re
from typing import Any

from fimone.llm.offline.arith import expected_values
from fimone.llm.offline.phrases import SEPARATORS, phrase
from fimone.llm.offline.text import detect_language
from fimone.llm.offline.tools import builds_on_previous

_REQUEST_MARK = re.compile(
    r"(?:current (?:request|query|question)|user request|request|query|goal|task|当前请求|当前问题)"
    r"\s*[:：]\s*",
    re.I,
)
# Words that start the next part: "then", "und dann", "danach", "anschließend", "然后",
# "，再 …", "最后".
_SPLIT = re.compile(
    r"\s*(?:;|；|(?:\b(?:and|und)\s+)?(?:\bthen\b|\bafter that\b|\bafterwards\b|\bfinally\b"
    r"|\bdann\b|\bdanach\b|\banschlie(?:ß|ss)end\b|\bschlie(?:ß|ss)lich\b|\bzum schluss\b)"
    r"|\balso\b|然后|并且|同时|另外|接着|随后|[，,]\s*(?:再|之后|最后|并)"
    r"|\band\b(?=\s+(?:what|how|tell|give|list|find|compute|calculate|write|explain|summari[sz]e"
    r"|check|compare)\b))\s*|(?<=[?？])\s*",
    re.I,
)
_FAILED = re.compile(
    r"^\(step failed|^(?:error|failed|failure)\b\s*[:：]|\[error\]|^\(no result\)|^\(empty\)",
    re.I,
)
_LEAD_IN = re.compile(
    r"^(?:first(?:ly)?|at first|zuerst|zunächst|erst(?:ens|mal)?|als erstes|请?首先|请?先)"
    r"[\s,，:]*",
    re.I,
)
# "Berechne zuerst 2+3": the German "first" after the verb.
_FIRST_AFTER_VERB = re.compile(r"^(\S+)\s+(?:zuerst|zunächst|erstmal|erst)\b\s*", re.I)
# The analyser input: "### Step s1: task" headers, each followed by that step's result.
_STEP_HEADER = re.compile(r"^#+\s*Step\s+(\S+?)\s*:.*$", re.M)


# What the DAG engine appends after the request on a re-plan or a re-ask.
_AFTER_REQUEST = re.compile(
    r"\n\s*(?:A previous plan \(attempt|Your previous reply was not a valid plan"
    r"|Follow-ups the user sent meanwhile:)"
)


def current_request(text: str) -> str:
    """The request itself, out of an enriched query ("Previous conversation: …" + request)."""
    cut_at = _AFTER_REQUEST.search(text)
    if cut_at and text[: cut_at.start()].strip():
        text = text[: cut_at.start()]
    marks = list(_REQUEST_MARK.finditer(text))
    if marks and "previous conversation" in text.lower():
        tail = text[marks[-1].end() :].strip()
        if tail:
            return tail
    if "previous conversation" in text.lower():
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
        if paragraphs:
            return paragraphs[-1]
    return text.strip()


def request_parts(query: str) -> list[str]:
    """The request's parts, in order ("First compute 3+4, then multiply that result by 10")."""
    parts = [
        _FIRST_AFTER_VERB.sub(r"\1 ", _LEAD_IN.sub("", p.strip(" ,，.。")))
        for p in _SPLIT.split(query)
        if p
    ]
    return [p for p in parts if len(p) > 1]


def make_plan(request_text: str, language: str = "en") -> dict[str, Any]:
    """``language``: the user's, for a request that does not show its own (offline_phrases)."""
    query = " ".join(current_request(request_text).split())
    short = query if len(query) <= 300 else query[:299] + "…"
    lang = detect_language(query, default=language)
    parts = request_parts(query)
    if len(parts) > 2 and all(builds_on_previous(p) for p in parts[1:3]):
        # A chain ("2+3, then double it, then add 1"): each link its own step, so each
        # computes on the one before; beyond three links the rest stays together.
        parts = [*parts[:2], " ".join(parts[2:])]
    elif len(parts) > 2:
        parts = [parts[0], " ".join(parts[1:])]  # at most 3 steps: the rest stays together
    if len(parts) >= 2:
        # A part that builds on the one before ("then … that result") depends on its step;
        # independent parts run in parallel.
        steps: list[dict[str, Any]] = [
            {
                "id": f"s{i + 1}",
                "task": part,
                "depends_on": [f"s{i}"] if i and builds_on_previous(part) else [],
            }
            for i, part in enumerate(parts)
        ]
        # The request is not repeated here: the steps did its work, the last only combines.
        ids = [s["id"] for s in steps]
        final = (
            phrase("plan_combine", lang)
            if len(ids) == 2
            else phrase("plan_combine_chain", lang, steps=", ".join(ids[:-1]), last=ids[-1])
        )
        steps.append({"id": f"s{len(ids) + 1}", "task": final, "depends_on": ids})
    else:
        gather = phrase("plan_gather", lang, request=short)
        answer = phrase("plan_answer", lang)
        steps = [
            {"id": "s1", "task": gather, "depends_on": []},
            {"id": "s2", "task": answer, "depends_on": ["s1"]},
        ]
    return {"steps": steps}


def step_results(text: str) -> dict[str, str]:
    """Step id -> result text, from the analyser's input (or one block when unstructured)."""
    headers = list(_STEP_HEADER.finditer(text))
    if not headers:
        body = text.split("Step results:", 1)[-1].strip()
        return {"all": body} if body else {}
    return {
        h.group(1): text[h.end() : headers[i + 1].start() if i + 1 < len(headers) else None].strip()
        for i, h in enumerate(headers)
    }


def _request_of(analyser_text: str) -> str:
    head = analyser_text.split("Step results:", 1)[0]
    head = re.sub(r"^\s*User request:\s*", "", head)
    return current_request(head)


def _numbers(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in re.findall(r"-?\d[\d,]*(?:\.\d+)?", text)]


_STATED_VALUE = re.compile(r"=\s*\**(-?\d[\d,]*(?:\.\d+)?)")


def _holds(numbers: list[float], value: float) -> bool:
    return any(abs(n - value) <= 1e-9 * max(1.0, abs(value)) for n in numbers)


def missing_values(request: str, results: dict[str, str]) -> list[str]:
    """What the answer lacks: the figures the request asks to compute, and the value each
    earlier step stated ("= 5"), that the answer does not state. The answer is the last
    step's result: the step the others feed (the engine writes the reply from all of them,
    but a plan whose last step dropped a figure did not finish the job)."""
    if not results:
        return []
    *earlier, (last_id, answer) = results.items()
    found = _numbers(answer)
    missing = [
        label
        for label, value in expected_values(request_parts(" ".join(request.split())))
        if not _holds(found, value)
    ]
    for sid, text in earlier:
        stated = _STATED_VALUE.findall(text)
        if stated and not _holds(found, float(stated[-1].replace(",", ""))):
            missing.append(f"{sid} = {stated[-1]}")
    return missing


def make_verdict(results_text: str, language: str = "en") -> dict[str, Any]:
    """Achieved when every step result is non-empty and not an error (a skipped step is a
    failed one), and the answer (the last step's result) states every figure the request
    asks to compute and every earlier step's value. A failed step is the surer failure:
    lower confidence than a missing figure. The reason is in the request's language (else
    ``language``, the user's)."""
    request = _request_of(results_text)
    lang = (
        "zh"
        if detect_language(results_text) == "zh"
        else detect_language(request, default=language)
    )
    results = step_results(results_text)
    bad = sorted(k for k, v in results.items() if not v or _FAILED.search(v))
    missing = missing_values(request, results)
    if not results:
        return {"achieved": False, "confidence": 0.2, "reason": phrase("verdict_no_results", lang)}
    if bad:
        reason = phrase("verdict_failed", lang, steps=", ".join(bad))
        return {"achieved": False, "confidence": 0.2, "reason": reason}
    if missing:
        reason = phrase("verdict_missing", lang, missing=SEPARATORS[lang].join(missing))
        return {"achieved": False, "confidence": 0.35, "reason": reason}
    return {"achieved": True, "confidence": 0.9, "reason": phrase("verdict_ok", lang)}

"""The offline model as planner ("JSON plan") and analyser ("JSON verdict").

Plans split the current request into 2–3 steps, the last depending on the others and a part
that builds on the previous one ("then … that result") depending on its step; verdicts say
achieved when every step result is non-empty and not an error and every figure the request
asks to compute appears in some result. The input shapes are
those of fimone.agent (``Current request:`` in an enriched query, ``### Step <id>:`` headers
in the analyser's input), read leniently.
"""

from __future__ import annotations

import re
from typing import Any

from .offline_arith import expected_values
from .offline_phrases import SEPARATORS, phrase
from .offline_text import detect_language
from .offline_tools import BACK_REFERENCE

_REQUEST_MARK = re.compile(
    r"(?:current (?:request|query|question)|user request|request|query|goal|task|当前请求|当前问题)"
    r"\s*[:：]\s*",
    re.I,
)
_SPLIT = re.compile(
    r"\s*(?:;|；|\band then\b|\bthen\b|\balso\b|\b(?:und )?dann\b|\bdanach\b|然后|并且|同时|另外"
    r"|\band\b(?=\s+(?:what|how|tell|give|list|find|compute|calculate|write|explain|summari[sz]e"
    r"|check|compare)\b))\s*|(?<=[?？])\s*",
    re.I,
)
_FAILED = re.compile(
    r"^\(step failed|^(?:error|failed|failure)\b\s*[:：]|\[error\]|^\(no result\)|^\(empty\)",
    re.I,
)
_LEAD_IN = re.compile(r"^(?:first(?:ly)?|at first|zuerst|erstens|首先|先)[\s,，:]*", re.I)
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
    parts = [_LEAD_IN.sub("", p.strip(" ,，.。")) for p in _SPLIT.split(query) if p]
    return [p for p in parts if len(p) > 1]


def make_plan(request_text: str, language: str = "en") -> dict[str, Any]:
    """``language``: the user's, for a request that does not show its own (offline_phrases)."""
    query = " ".join(current_request(request_text).split())
    short = query if len(query) <= 300 else query[:299] + "…"
    lang = detect_language(query, default=language)
    parts = request_parts(query)
    if len(parts) > 2:
        parts = [parts[0], " ".join(parts[1:])]  # at most 3 steps: the rest stays together
    if len(parts) >= 2:
        # A part that builds on the one before ("then … that result") depends on its step;
        # independent parts run in parallel.
        steps = [
            {
                "id": f"s{i + 1}",
                "task": part,
                "depends_on": [f"s{i}"] if i and BACK_REFERENCE.search(part) else [],
            }
            for i, part in enumerate(parts[:2])
        ]
        # The request is not repeated here: s1 and s2 did its work, s3 only combines.
        final = phrase("plan_combine", lang)
        steps.append({"id": "s3", "task": final, "depends_on": ["s1", "s2"]})
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


def missing_values(request: str, results: dict[str, str]) -> list[str]:
    """The figures the request asks to compute that no step result states."""
    found = [n for text in results.values() for n in _numbers(text)]
    return [
        label
        for label, value in expected_values(request_parts(" ".join(request.split())))
        if not any(abs(n - value) <= 1e-9 * max(1.0, abs(value)) for n in found)
    ]


def make_verdict(results_text: str, language: str = "en") -> dict[str, Any]:
    """Achieved when every step result is non-empty and not an error, and every figure the
    request asks to compute is stated by some result. The reason is in the request's
    language (else ``language``, the user's)."""
    request = _request_of(results_text)
    lang = (
        "zh"
        if detect_language(results_text) == "zh"
        else detect_language(request, default=language)
    )
    results = step_results(results_text)
    bad = sorted(k for k, v in results.items() if not v or _FAILED.search(v))
    missing = missing_values(request, results) if results else []
    achieved = bool(results) and not bad and not missing
    if not results:
        reason = phrase("verdict_no_results", lang)
    elif bad:
        reason = phrase("verdict_failed", lang, steps=", ".join(bad))
    elif missing:
        reason = phrase("verdict_missing", lang, missing=SEPARATORS[lang].join(missing))
    else:
        reason = phrase("verdict_ok", lang)
    return {"achieved": achieved, "confidence": 0.9 if achieved else 0.35, "reason": reason}

"""Cached input tokens as providers report them (``prompt_tokens_details.cached_tokens``)."""

from types import SimpleNamespace

from chat.runs.metering import usage_totals
from contextmgmt.core.llm import Usage
from fimone.llm.providers.streaming import usage_of
from fimone.llm.providers.wire import usage_of_reply as _usage


def test_cached_tokens_are_read_from_both_wire_forms_and_summed_rm_3():
    wire = SimpleNamespace(
        prompt_tokens=2_000,
        completion_tokens=10,
        completion_tokens_details=None,
        prompt_tokens_details=SimpleNamespace(cached_tokens=1_536),
    )
    assert _usage(wire).cached_input_tokens == 1_536
    streamed = usage_of(
        {
            "prompt_tokens": 2_000,
            "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": 1_024},
        }
    )
    assert streamed.cached_input_tokens == 1_024
    assert usage_of({"prompt_tokens": 10, "completion_tokens": 1}).cached_input_tokens == 0
    total = _usage(wire) + streamed
    assert total.cached_input_tokens == 2_560 and total.as_dict()["cached_input_tokens"] == 2_560
    assert usage_totals(total, Usage(100, 5))["cached_input_tokens"] == 2_560
    assert "cached_input_tokens" not in usage_totals(Usage(10, 1), Usage())

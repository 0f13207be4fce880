"""The context's tiers: tool definitions get a share of the budget, the history what is
left, and the history never pays for definitions (RT.3)."""

from hypothesis import given
from hypothesis import strategies as st

from contextmgmt.core.tiers import TOOL_DEFINITIONS_SHARE, split_budget, tool_definitions_cap

budgets = st.integers(1, 2_000_000)
tokens = st.integers(0, 5_000_000)


@given(
    budget=budgets,
    instructions=tokens,
    definitions=tokens,
    always=tokens,
    cut=st.none() | tokens,
    query=tokens,
)
def test_rt3_the_tiers_sum_to_at_most_the_budget_whenever_the_pinned_tiers_fit(
    budget, instructions, definitions, always, cut, query
):
    split = split_budget(
        budget,
        instructions=instructions,
        tool_definitions=definitions,
        always=always,
        cut=cut,
        query=query,
    )
    assert split.tools <= max(tool_definitions_cap(budget), always, definitions)
    if instructions + query + split.tools <= budget:
        assert split.total <= budget
    else:  # what is pinned (instructions, query, the tools always sent) fills it alone
        assert split.history == 0
    assert split.history >= 0


@given(
    budget=budgets,
    instructions=tokens,
    definitions=tokens,
    query=tokens,
    cut=st.none() | tokens,
    too_many=st.booleans(),
)
def test_rt3_history_is_never_given_up_for_definitions(
    budget, instructions, definitions, query, cut, too_many
):
    """However many tools there are, the history keeps what is left after the share."""
    split = split_budget(
        budget,
        instructions=instructions,
        tool_definitions=definitions,
        cut=cut,
        query=query,
        too_many=too_many,
    )
    floor = max(0, budget - instructions - query - tool_definitions_cap(budget))
    assert split.history >= floor
    assert split.tools <= tool_definitions_cap(budget)


@given(
    budget=budgets,
    instructions=tokens,
    fewer=tokens,
    more=tokens,
    query=tokens,
)
def test_rt3_more_tools_never_shrink_the_history_past_the_share(
    budget, instructions, fewer, more, query
):
    small, large = sorted((fewer, more))
    a = split_budget(budget, instructions=instructions, tool_definitions=small, query=query)
    b = split_budget(budget, instructions=instructions, tool_definitions=large, query=query)
    assert b.history <= a.history  # more definitions may take more, up to the share …
    assert a.history - b.history <= tool_definitions_cap(budget)  # … and no more


@given(budget=budgets, definitions=tokens)
def test_rt3_definitions_within_the_share_are_all_sent(budget, definitions):
    split = split_budget(budget, instructions=0, tool_definitions=definitions)
    if definitions <= tool_definitions_cap(budget):
        assert not split.deferred and split.tools == definitions
    else:
        assert split.deferred and split.tools == tool_definitions_cap(budget)


def test_rt3_the_tools_always_sent_are_the_tiers_floor():
    """A tiny budget whose built-ins and finder alone pass the share: they are still sent,
    and the tier counts them."""
    split = split_budget(4_000, instructions=500, tool_definitions=50_000, always=1_200)
    assert split.deferred and split.tools == 1_200
    assert split.history == 4_000 - 500 - 1_200


def test_rt3_the_share_is_a_quarter():
    assert TOOL_DEFINITIONS_SHARE == 0.25
    assert tool_definitions_cap(24_000) == 6_000


def test_rt3_more_tools_than_a_request_may_carry_are_cut_though_they_fit():
    split = split_budget(
        100_000, instructions=500, tool_definitions=8_000, cut=3_000, too_many=True
    )
    assert split.deferred and split.tools == 3_000


def test_rt3_cut_definitions_take_what_is_sent_and_the_room_for_finds_not_the_share():
    split = split_budget(100_000, instructions=500, tool_definitions=50_000, cut=2_300)
    assert split.deferred and split.tools == 2_300
    assert split.history == 100_000 - 500 - 2_300

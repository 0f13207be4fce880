"""The summariser's transcript: pieces carry their fact sources, lines are sized from the
messages' cached estimates without undercounting."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from contextmgmt.core.messages import ChatMessage, ToolCall
from contextmgmt.core.tokens import estimate_tokens
from contextmgmt.core.transcript import _block_tokens, transcript_pieces, transcript_text

from .builders import user

FACT = re.compile(r"FACT-\d+")


def test_pieces_carry_the_fact_sources_of_their_messages():
    msgs = [user(f"FACT-{i} " + "z" * 600) for i in range(6)]
    pieces = transcript_pieces(msgs, 400)
    assert len(pieces) > 1
    sources = [s for _, srcs in pieces for s in srcs]
    assert sources == [m.text() for m in msgs]
    for text, srcs in pieces:
        assert all(FACT.search(s).group() in text for s in srcs)


@settings(max_examples=300, deadline=None)
@given(
    role=st.sampled_from(["user", "assistant", "tool", "system"]),
    content=st.text(alphabet=st.sampled_from(list('aZ9 .,\n"中éЖ😀_')), max_size=400),
    calls=st.lists(
        st.tuples(
            st.sampled_from(["search", "read_file"]),
            st.text(alphabet=st.sampled_from(list('{}":, az')), max_size=60),
        ),
        max_size=3,
    ),
)
def test_a_transcript_line_is_never_estimated_below_its_own_count(role, content, calls):
    msg = ChatMessage(
        role=role,
        content=content,
        tool_calls=[ToolCall(f"c{i}", name, args) for i, (name, args) in enumerate(calls)] or None,
    )
    block = f"{role}: {transcript_text(msg)}"
    assert estimate_tokens(block) <= _block_tokens(msg, block) <= estimate_tokens(block) + 2

"""The in-memory channel layer sweeps for expired messages once per interval, not per call,
and is built on channels' public layer interface only."""

from __future__ import annotations

import asyncio

import channels.layers
import pytest
from channels.exceptions import ChannelFull

from fimone.memory_layer import InMemoryChannelLayer


async def test_many_sends_and_receives_sweep_once_per_interval():
    layer = InMemoryChannelLayer(sweep_seconds=3600)
    channels = [await layer.new_channel() for _ in range(50)]
    for channel in channels:
        await layer.group_add("everyone", channel)
    for n in range(20):
        await layer.group_send("everyone", {"type": "tick", "n": n})
    received = [await layer.receive(channel) for channel in channels for _ in range(20)]

    assert len(received) == 50 * 20
    assert [m["n"] for m in received[:20]] == list(range(20))  # in order, none lost
    assert layer.sweeps == 1  # 20 group sends and 1,000 receives: one sweep


async def test_expired_messages_and_their_memberships_still_go():
    layer = InMemoryChannelLayer(expiry=0.01, sweep_seconds=0)
    stale, fresh = await layer.new_channel(), await layer.new_channel()
    await layer.group_add("g", stale)
    await layer.send(stale, {"type": "old"})
    await asyncio.sleep(0.05)
    await layer.send(fresh, {"type": "new"})
    assert await layer.receive(fresh) == {"type": "new"}  # the sweep ran here
    assert stale not in layer.channels  # its expired message was dropped
    assert stale not in layer.groups.get("g", {})  # and it left its groups, as in channels


def test_the_layer_uses_no_private_method_of_channels_rd_2():
    # channels' own in-memory layer sweeps in a private method; this one implements the
    # public layer interface instead of overriding it.
    assert channels.layers.InMemoryChannelLayer not in InMemoryChannelLayer.__mro__
    assert issubclass(InMemoryChannelLayer, channels.layers.BaseChannelLayer)


async def test_a_waiting_receiver_gets_the_next_message_and_a_copy_of_it():
    layer = InMemoryChannelLayer()
    channel = await layer.new_channel()
    receiving = asyncio.ensure_future(layer.receive(channel))
    await asyncio.sleep(0)
    message = {"type": "hello", "items": [1]}
    await layer.send(channel, message)
    got = await receiving
    assert got == message and got["items"] is not message["items"]
    assert channel not in layer.channels  # empty and unwatched: forgotten


async def test_a_cancelled_receiver_leaves_nothing_behind_and_a_later_one_gets_messages():
    layer = InMemoryChannelLayer()
    channel = await layer.new_channel()
    receiving = asyncio.ensure_future(layer.receive(channel))
    await asyncio.sleep(0)
    receiving.cancel()
    with pytest.raises(asyncio.CancelledError):
        await receiving
    assert channel not in layer.channels
    await layer.send(channel, {"type": "later"})
    assert await layer.receive(channel) == {"type": "later"}


async def test_a_full_channel_refuses_and_a_group_send_skips_it():
    layer = InMemoryChannelLayer(capacity=2)
    full, other = await layer.new_channel(), await layer.new_channel()
    for channel in (full, other):
        await layer.group_add("g", channel)
    await layer.send(full, {"type": "a"})
    await layer.send(full, {"type": "b"})
    with pytest.raises(ChannelFull):
        await layer.send(full, {"type": "c"})
    await layer.group_send("g", {"type": "all"})
    assert await layer.receive(other) == {"type": "all"}
    assert [await layer.receive(full) for _ in range(2)] == [{"type": "a"}, {"type": "b"}]
    await layer.group_discard("g", full)
    await layer.group_discard("g", other)
    assert "g" not in layer.groups
    await layer.flush()
    assert layer.channels == {} and layer.groups == {}

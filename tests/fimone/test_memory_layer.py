"""The in-memory channel layer sweeps for expired messages once per interval, not per call."""

from __future__ import annotations

import asyncio

from channels.layers import InMemoryChannelLayer as ChannelsLayer

from fimone.memory_layer import InMemoryChannelLayer


async def test_many_sends_and_receives_sweep_once_per_interval(monkeypatch):
    sweeps = []
    original = ChannelsLayer._clean_expired
    monkeypatch.setattr(
        ChannelsLayer, "_clean_expired", lambda self: sweeps.append(1) or original(self)
    )
    layer = InMemoryChannelLayer(sweep_seconds=3600)
    channels = [await layer.new_channel() for _ in range(50)]
    for channel in channels:
        await layer.group_add("everyone", channel)
    for n in range(20):
        await layer.group_send("everyone", {"type": "tick", "n": n})
    received = [await layer.receive(channel) for channel in channels for _ in range(20)]

    assert len(received) == 50 * 20
    assert [m["n"] for m in received[:20]] == list(range(20))  # in order, none lost
    assert len(sweeps) == 1  # 20 group sends and 1,000 receives: one sweep


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

"""The in-memory channel layer (one process, no Redis), without a sweep per message.

channels' ``InMemoryChannelLayer`` looks through every channel and every group for expired
messages and memberships on each ``receive()`` and ``group_send()``: with N sockets open,
each streamed event cost O(N), so a run's cost grew with the number of sockets the process
holds (150 sockets: a fifth of the process's time went to these sweeps). Here the sweep
runs at most once per ``sweep_seconds``; expiry is measured in tens of seconds, so a sweep
a second is as good. See docs/operations.md, "Throughput".
"""

from __future__ import annotations

import time

from channels.layers import InMemoryChannelLayer as _InMemoryChannelLayer


class InMemoryChannelLayer(_InMemoryChannelLayer):
    def __init__(self, *args, sweep_seconds: float = 1.0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.sweep_seconds = sweep_seconds
        self._next_sweep = 0.0

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + self.sweep_seconds
        super()._clean_expired()

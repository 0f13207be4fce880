"""End-to-end tests share a daphne per environment, each as a fresh user of its own
(tests/support/shared_servers.py), unless marked ``own_server`` (docs/testing.md)."""

from __future__ import annotations

import pytest


@pytest.fixture
def live_daphne_shared(request) -> bool:
    return request.node.get_closest_marker("own_server") is None

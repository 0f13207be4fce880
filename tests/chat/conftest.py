"""Fixtures for the chat app tests, named by the state they build (the shared ones, such as
``conversation`` and ``logged_in_client``, are in ``tests/conftest.py``)."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.fixture(autouse=True)
def media_root(media_root):
    """Every chat test stores uploads in its own empty media folder."""
    return media_root


@pytest.fixture
def csrf_enforcing_client(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client

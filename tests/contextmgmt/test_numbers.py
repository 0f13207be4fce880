"""Numbers in the admin as each language writes them, and as the chat's Intl.NumberFormat
writes them in that language."""

from __future__ import annotations

import pytest
from django.utils import translation

from contextmgmt.numbers import grouped


@pytest.mark.parametrize(
    "language,whole,fraction",
    [("en", "131,072", "1.250"), ("de", "131.072", "1,250"), ("zh-hans", "131,072", "1.250")],
)
def test_grouped_in_each_language(language, whole, fraction):
    with translation.override(language):
        assert grouped(131_072) == whole
        assert grouped(1.25, 3) == fraction
        assert grouped(999) == "999"

"""Numbers as the admin's reader writes them: the active language's separators ("131,072"
in English, "131.072" in German, "1,250" for a German 1.25 to three places).

Grouping is asked for here rather than switched on for the whole site
(``USE_THOUSAND_SEPARATOR``), which would also group ids and counts that templates put in
URLs and form values."""

from __future__ import annotations

from django.utils.formats import get_format, number_format


def grouped(value: float, decimals: int | None = None) -> str:
    if get_format("THOUSAND_SEPARATOR"):
        return number_format(value, decimal_pos=decimals, force_grouping=True)
    # Django's Chinese formats name no separator (131072); CLDR, and with it the chat's own
    # Intl.NumberFormat, write 131,072 in Chinese: the admin says it as the chat does.
    return f"{value:,.{decimals}f}" if decimals is not None else f"{value:,}"

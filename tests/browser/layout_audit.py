"""A layout check for any page state a browser test reaches: nothing wider than the
viewport, no labelled control whose text is clipped, and on a touch screen every control at
least 44 px tall and wide (inline links inside an answer's text excepted, as WCAG does)."""

from __future__ import annotations

from pathlib import Path

MIN_TOUCH_PX = 44

_AUDIT_JS = (Path(__file__).with_name("layout_audit.js")).read_text()


def layout_problems(page, *, touch: bool) -> list[str]:
    """What the page shows now breaks; an empty list when it is fine."""
    return page.evaluate(_AUDIT_JS, {"touch": touch, "minTouch": MIN_TOUCH_PX})

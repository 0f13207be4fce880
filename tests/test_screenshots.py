"""docs/screenshots/: every PNG the screenshot script writes is committed and linked from
docs/ui.md, and every screenshot it links exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "docs" / "screenshots"
LINK = re.compile(r"\(screenshots/([\w.-]+\.png)\)")


def test_the_ui_page_links_every_screenshot_and_nothing_missing():
    linked = set(LINK.findall((ROOT / "docs" / "ui.md").read_text()))
    present = {path.name for path in SHOTS.glob("*.png")}
    assert present, "no screenshots in docs/screenshots (run bin/screenshots)"
    assert linked - present == set(), "docs/ui.md links screenshots that do not exist"
    assert present - linked == set(), "screenshots docs/ui.md does not link"


def test_each_screenshot_is_a_png_of_a_desktop_or_phone_screen():
    for path in SHOTS.glob("*.png"):
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", path.name
        width = int.from_bytes(data[16:20], "big")
        assert width in (1280, 390), (path.name, width)
        assert re.fullmatch(r"[a-z-]+-(desktop|phone)-(light|dark)\.png", path.name), path.name

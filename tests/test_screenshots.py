"""docs/screenshots/: every PNG the screenshot script writes is committed and linked from the
README, and every screenshot the README links exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "docs" / "screenshots"
LINK = re.compile(r"\(docs/screenshots/([\w.-]+\.png)\)")


def test_the_readme_links_every_screenshot_and_nothing_missing():
    linked = set(LINK.findall((ROOT / "README.md").read_text()))
    present = {path.name for path in SHOTS.glob("*.png")}
    assert present, "no screenshots in docs/screenshots (run bin/screenshots)"
    assert linked - present == set(), "the README links screenshots that do not exist"
    assert present - linked == set(), "screenshots the README does not link"


def test_each_screenshot_is_a_png_of_a_desktop_or_phone_screen():
    for path in SHOTS.glob("*.png"):
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", path.name
        width = int.from_bytes(data[16:20], "big")
        assert width in (1280, 390), (path.name, width)
        assert re.fullmatch(r"[a-z-]+-(desktop|phone)-(light|dark)\.png", path.name), path.name

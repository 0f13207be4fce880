"""The translation catalogs (locale/): complete for Chinese and German, compiled, current.

``bin/makemessages`` is run on a copy of the sources, so that a string added to a template,
a Python module or the static JS without a translation fails here, not in front of a user.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polib
import pytest

# Runs makemessages over the whole tree (not in bin/test --fast), once per worker that runs a
# test of the module: the module runs on one worker (docs/testing.md, "Groups and order").
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("locale")]

ROOT = Path(__file__).resolve().parents[1]
LANGS = ("zh_Hans", "de")
DOMAINS = ("django", "djangojs")
SOURCES = (
    "bin",
    "chat",
    "config",
    "contextmgmt",
    "fimone",
    "locale",
    "static",
    "templates",
    "manage.py",
)


def _under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


@pytest.fixture(scope="module")
def regenerated_locale(tmp_path_factory) -> Path:
    """locale/ as ``bin/makemessages`` leaves it after reading today's sources."""
    if shutil.which("xgettext") is None:
        reason = "GNU gettext is not installed (apt install gettext; bin/setup dev does it)"
        if _under_ci():
            pytest.fail(f"CI must check the catalogs, but: {reason}", pytrace=False)
        pytest.skip(reason)
    copy = tmp_path_factory.mktemp("sources")
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, copy / name)
    env = {**os.environ, "PYTHON": sys.executable, "FIMONE_DATA_DIR": str(copy / "data")}
    subprocess.run(
        [str(copy / "bin" / "makemessages"), "--no-compile"],
        cwd=copy,
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return copy / "locale"


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("domain", DOMAINS)
def test_makemessages_leaves_no_untranslated_or_fuzzy_string(regenerated_locale, lang, domain):
    path = regenerated_locale / lang / "LC_MESSAGES" / f"{domain}.po"
    assert path.exists(), f"bin/makemessages made no {domain} catalog for {lang}"
    catalog = polib.pofile(str(path))
    assert len(catalog.translated_entries()) > 10, "the catalog holds the interface's strings"
    untranslated = [entry.msgid for entry in catalog.untranslated_entries()]
    fuzzy = [entry.msgid for entry in catalog.fuzzy_entries()]
    assert not untranslated, f"untranslated in {lang}/{domain}.po: {untranslated}"
    assert not fuzzy, f"fuzzy in {lang}/{domain}.po: {fuzzy}"
    assert not catalog.metadata_is_fuzzy


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("domain", DOMAINS)
def test_committed_catalogs_are_compiled_and_keep_their_placeholders(lang, domain):
    po_path = ROOT / "locale" / lang / "LC_MESSAGES" / f"{domain}.po"
    catalog = polib.pofile(str(po_path))
    mo_path = po_path.with_suffix(".mo")
    compiled = {(entry.msgctxt, entry.msgid): entry for entry in polib.mofile(str(mo_path))}
    for entry in catalog.translated_entries():
        mo_entry = compiled.get((entry.msgctxt, entry.msgid))
        assert mo_entry is not None, f"{entry.msgid!r} is not compiled: run bin/makemessages"
        assert (mo_entry.msgstr, mo_entry.msgstr_plural) == (
            entry.msgstr,
            {int(k): v for k, v in entry.msgstr_plural.items()},
        ), f"{entry.msgid!r} changed since the .mo was compiled: run bin/makemessages"
    if shutil.which("msgfmt"):
        # msgfmt --check: python-format/javascript-format placeholders match the msgid's.
        subprocess.run(
            ["msgfmt", "--check", "-o", os.devnull, str(po_path)], check=True, capture_output=True
        )


# A user-visible string literal in the static JS that does not go through gettext(): an
# attribute or text property set to a literal, or a literal handed to a function that shows
# it. Names and symbols are not sentences: a literal needs a word of three letters or more.
_BARE_JS_STRING = re.compile(
    r"""(?:\b(?:text|title|placeholder|alt|label)|"aria-label")\s*:\s*(["'`])(?P<a>(?:(?!\1).)*)\1"""
    r"""|\b(?:toast|setError|addNote|setConnection|failLocalRun)\(\s*(["'`])(?P<b>(?:(?!\3).)*)\3"""
    r"""|\.(?:textContent|title|placeholder)\s*=\s*(["'`])(?P<c>(?:(?!\5).)*)\5"""
)
_NOT_A_SENTENCE = {"fimone"}


def test_the_static_js_shows_no_string_without_gettext():
    bare = []
    for path in sorted((ROOT / "static").rglob("*.js")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for match in _BARE_JS_STRING.finditer(line):
                literal = match.group("a") or match.group("b") or match.group("c") or ""
                shown = re.sub(r"\$\{[^}]*\}", " ", literal)  # a template's expressions
                words = set(re.findall(r"[A-Za-z]{3,}", shown)) - _NOT_A_SENTENCE
                if words:
                    bare.append(f"{path.relative_to(ROOT)}:{number}: {literal}")
    assert not bare, "wrap these in gettext() (docs/operations.md, Languages):\n" + "\n".join(bare)

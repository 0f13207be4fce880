"""Resolve git conflict blocks in translation catalogs by keeping every entry of both
sides: one entry per (context, msgid, plural), a translated one over an untranslated one.

Used by bin/resolve-locale while a rebase is stopped on .po conflicts (docs/operations.md,
"Languages")."""

from __future__ import annotations

import re
import sys

import polib

CONFLICT = re.compile(r"<<<<<<< [^\n]*\n(.*?)=======\n(.*?)>>>>>>> [^\n]*\n", re.S)


def union(path: str) -> int:
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    text = CONFLICT.sub(lambda m: m.group(1) + "\n" + m.group(2), text)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    catalog = polib.pofile(path)
    kept: dict[tuple, polib.POEntry] = {}
    merged = polib.POFile(wrapwidth=79)
    merged.metadata = catalog.metadata
    merged.header = catalog.header
    for entry in catalog:
        key = (entry.msgctxt, entry.msgid, entry.msgid_plural)
        earlier = kept.get(key)
        if earlier is None:
            kept[key] = entry
            merged.append(entry)
        elif not earlier.translated() and entry.translated():
            merged.remove(earlier)
            merged.append(entry)
            kept[key] = entry
    merged.save(path)
    return len(merged)


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(name, union(name))

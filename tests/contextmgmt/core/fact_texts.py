"""Texts shared by the fact scan and fact check tests: one example of each kind of fact,
and the pieces hypothesis builds texts from."""

KIND_EXAMPLES = [  # (text, the one fact in it, its kind)
    ("see https://example.com/a/b?x=1.", "https://example.com/a/b?x=1", "url"),
    ("mail ops@example.org now", "ops@example.org", "email"),
    ("open /srv/app/settings.py", "/srv/app/settings.py", "path"),
    ("edit src/util/io.py", "src/util/io.py", "path"),
    (r"on C:\Users\ana\notes.txt", r"C:\Users\ana\notes.txt", "path"),
    ("call `load_config()` first", "load_config()", "code"),
    ("due 2025-02-14 please", "2025-02-14", "date"),
    ("python 3.11.7 installed", "3.11.7", "version"),
    ("invoice INV-2024-0042 paid", "INV-2024-0042", "identifier"),
    ("commit 7f3a9c2 merged", "7f3a9c2", "identifier"),
    ("use max_retries here", "max_retries", "identifier"),
    ("at 14:30 sharp", "14:30", "time"),
    ("total $1,249.90 due", "$1,249.90", "money"),
    ("growth 12.5% yoy", "12.5%", "number"),
    ("we have 4096 rows", "4096 rows", "number"),
    ("it weighs 412.5 kg", "412.5 kg", "number"),
    ("keep 4 attempts", "4 attempts", "number"),
    ("每月 8000 元。", "8000 元", "number"),
    ("meet at 14:30 UTC", "14:30 UTC", "time"),
    ("copy to s3://bk/nightly/ now", "s3://bk/nightly/", "url"),
    ("set max_connections=400 first", "max_connections=400", "setting"),
    ("read /srv/app/stage.yaml.", "/srv/app/stage.yaml", "path"),
]


TOKENS = ["1234.5", "1,234.5", "AB-12", "ab-12", "2012", "12", "x", "$", "%", "/srv/a.py"]

SCAN_PIECES = [
    *TOKENS,
    *["ab", "Zq", "v1.2.3", "x=1", "a_b", "c9", "@", "://", "/", "C:", "\\", "`", "http"],
    *["2026-03-01", "10:30", " UTC", "kg", " ms", "元", "é", "中", "Ж", "_", "-", "+", "."],
    *[" ", "  ", "\n", ",", ";", "(", ")", "~", "=", ":", "$", "€", "1", "07", "999"],
    # White space to Unicode but not to the ASCII classes an all-ASCII text is scanned with.
    *["\x1c", "\x1f", "\t", "\x0b"],
]

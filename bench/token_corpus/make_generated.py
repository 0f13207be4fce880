"""Writes the generated part of the token corpus (gen_*.txt), deterministically.

Run from the repo root:  .venv/bin/python bench/token_corpus/make_generated.py
The hand-written and copied files beside it are described in README.md.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIRST = ["Ana", "Bruno", "Chen", "Dmitri", "Emma", "Farid", "Grace", "Hiro", "Ines", "Jonas"]
LAST = ["Silva", "Müller", "Wang", "Ivanov", "Smith", "Haddad", "Lee", "Tanaka", "García", "Berg"]
CITIES = ["Lisbon", "Berlin", "Shanghai", "Moscow", "London", "Cairo", "Seoul", "Tokyo", "Madrid"]
PRODUCTS = ["USB-C cable 2m", "Mechanical keyboard", '27" monitor', "Desk lamp", "Webcam HD"]
PATHS = ["/api/v1/orders", "/api/v1/users/{id}", "/chat/ws", "/admin/login/", "/static/app.js"]
WORDS = "alpha beta gamma delta cache queue worker shard replica index token budget".split()


def stamp(rng: random.Random, base: datetime) -> datetime:
    return base + timedelta(seconds=rng.randrange(0, 86400 * 30), microseconds=rng.randrange(10**6))


def gen_json(rng: random.Random, indent: int | None, ensure_ascii: bool = True) -> str:
    base = datetime(2026, 3, 1, tzinfo=UTC)
    orders = []
    for i in range(40 if indent else 60):
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        orders.append(
            {
                "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                "number": 100000 + i * 7,
                "customer": {
                    "name": name,
                    "email": name.lower().replace(" ", ".") + "@example.com",
                    "city": rng.choice(CITIES),
                },
                "items": [
                    {
                        "sku": f"SKU-{rng.randrange(10000):04d}",
                        "title": rng.choice(PRODUCTS),
                        "qty": rng.randint(1, 5),
                        "price": round(rng.uniform(3, 400), 2),
                    }
                    for _ in range(rng.randint(1, 3))
                ],
                "paid": rng.random() < 0.8,
                "coupon": None if rng.random() < 0.7 else rng.choice(WORDS).upper() + "10",
                "created_at": stamp(rng, base).isoformat(),
            }
        )
    doc = {"status": "ok", "page": 1, "per_page": len(orders), "orders": orders}
    return json.dumps(doc, indent=indent, ensure_ascii=ensure_ascii) + "\n"


def gen_json_i18n(rng: random.Random) -> str:
    notes = [
        "上下文窗口是有限的",
        "Контекстное окно конечно",
        "Übergrößenprüfung läuft",
        "コンテキストウィンドウ",
        "نافذة السياق محدودة",
    ]
    rows = [
        {
            "id": i,
            "lang": ["zh", "ru", "de", "ja", "ar"][i % 5],
            "note": notes[i % 5],
            "score": round(rng.random(), 4),
        }
        for i in range(60)
    ]
    # Python's json.dumps escapes non-ASCII by default: tool results often look like this.
    return json.dumps(rows) + "\n"


def gen_csv(rng: random.Random) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["order_id", "date", "customer", "city", "product", "qty", "unit_price", "total"])
    base = datetime(2026, 1, 1)
    for i in range(150):
        qty = rng.randint(1, 9)
        price = round(rng.uniform(2, 500), 2)
        w.writerow(
            [
                70000 + i,
                (base + timedelta(days=rng.randrange(365))).date().isoformat(),
                f"{rng.choice(FIRST)} {rng.choice(LAST)}",
                rng.choice(CITIES),
                rng.choice(PRODUCTS),
                qty,
                f"{price:.2f}",
                f"{qty * price:.2f}",
            ]
        )
    return out.getvalue()


def gen_logs(rng: random.Random) -> str:
    base = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
    lines = []
    t = base
    for _ in range(160):
        t += timedelta(milliseconds=rng.randrange(5, 4000))
        level = rng.choices(["INFO", "DEBUG", "WARNING", "ERROR"], [70, 15, 10, 5])[0]
        path = rng.choice(PATHS).replace("{id}", str(rng.randrange(1, 99999)))
        rid = f"{rng.getrandbits(64):016x}"
        if level == "ERROR":
            timeout = rng.randrange(5, 60)
            host = f"10.0.{rng.randrange(256)}.{rng.randrange(256)}:8000"
            msg = f"upstream timeout after {timeout}s host={host}"
        elif level == "WARNING":
            seconds, rows = rng.uniform(0.5, 9), rng.randrange(10**6)
            msg = f"slow query {seconds:.3f}s table=chat_message rows={rows}"
        else:
            status = rng.choice([200, 200, 200, 201, 304, 404])
            size, ms = rng.randrange(100, 90000), rng.uniform(0.4, 900)
            msg = f'"GET {path} HTTP/1.1" {status} {size}B {ms:.1f}ms'
        logger = rng.choice(["http", "chat", "agent", "db"])
        stamp_ms = t.isoformat(timespec="milliseconds")
        lines.append(f"{stamp_ms} {level:<7} [fimone.{logger}] req={rid} {msg}")
    return "\n".join(lines) + "\n"


def gen_numbers(rng: random.Random) -> str:
    lines = []
    for _ in range(80):
        kind = rng.randrange(4)
        if kind == 0:
            lines.append(" ".join(f"{rng.uniform(-1e4, 1e4):.4f}" for _ in range(8)))
        elif kind == 1:
            lines.append(", ".join(str(rng.randrange(10**9)) for _ in range(10)))
        elif kind == 2:
            lines.append("\t".join(f"{rng.uniform(0, 1e7):,.2f}" for _ in range(6)))
        else:
            lines.append(" ".join(f"{rng.gauss(0, 1):.6e}" for _ in range(6)))
    return "\n".join(lines) + "\n"


def gen_base64(rng: random.Random) -> str:
    blob = base64.b64encode(rng.randbytes(4500)).decode()
    wrapped = "\n".join(blob[i : i + 76] for i in range(0, len(blob), 76))
    data_url = "data:image/png;base64," + base64.b64encode(rng.randbytes(1500)).decode()
    return wrapped + "\n" + data_url + "\n"


def gen_hex(rng: random.Random) -> str:
    lines = []
    for i in range(120):
        digest = hashlib.sha256(rng.randbytes(16)).hexdigest()
        sha1 = hashlib.sha1(rng.randbytes(8)).hexdigest()
        ident = uuid.UUID(int=rng.getrandbits(128))
        lines.append(f"{digest}  file_{i:03d}.tar.gz  commit {sha1[:12]} {ident}")
    return "\n".join(lines) + "\n"


def gen_urls(rng: random.Random) -> str:
    hosts = ["example.com", "docs.example.org", "cdn.example.net", "api.example.io"]
    lines = []
    for _ in range(100):
        host = rng.choice(hosts)
        parts = "/".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
        query = "&".join(
            f"{rng.choice(WORDS)}={rng.randrange(1000)}" for _ in range(rng.randint(0, 3))
        )
        url = f"https://{host}/{parts}" + (f"?{query}" if query else "")
        if rng.random() < 0.3:
            url += (
                f"&utm_source=newsletter&sig={rng.getrandbits(128):032x}"
                if query
                else f"#section-{rng.randrange(20)}"
            )
        lines.append(url)
    return "\n".join(lines) + "\n"


def gen_traceback(rng: random.Random) -> str:
    blocks = []
    for _ in range(12):
        frames = []
        for _ in range(rng.randint(3, 7)):
            mod = rng.choice(
                [
                    "chat/runs.py",
                    "fimone/agent/react.py",
                    "contextmgmt/core/guard.py",
                    "django/db/backends/utils.py",
                    "asyncio/tasks.py",
                ]
            )
            fn = rng.choice(["run_turn", "_execute", "fit", "__call__", "send", "step"])
            frames.append(
                f'  File "/srv/fimone/{mod}", line {rng.randrange(20, 900)}, in {fn}\n'
                f"    result = await self.{fn}(messages, budget={rng.randrange(4000, 128000)})"
            )
        err = rng.choice(
            [
                "KeyError: 'tool_call_id'",
                "TimeoutError",
                "ValueError: budget must be positive",
                "django.db.utils.OperationalError: database is locked",
            ]
        )
        blocks.append("Traceback (most recent call last):\n" + "\n".join(frames) + "\n" + err)
    return "\n\n".join(blocks) + "\n"


def main() -> None:
    rng = random.Random(20261130)
    kinds = {
        "gen_json_pretty.json.txt": lambda: gen_json(rng, 2),
        "gen_json_compact.json.txt": lambda: gen_json(rng, None),
        "gen_json_escaped.json.txt": lambda: gen_json_i18n(rng),
        "gen_table.csv.txt": lambda: gen_csv(rng),
        "gen_app.log.txt": lambda: gen_logs(rng),
        "gen_traceback.log.txt": lambda: gen_traceback(rng),
        "gen_numbers.txt": lambda: gen_numbers(rng),
        "gen_base64.txt": lambda: gen_base64(rng),
        "gen_hex.txt": lambda: gen_hex(rng),
        "gen_urls.txt": lambda: gen_urls(rng),
    }
    for name, make in kinds.items():
        (HERE / name).write_text(make(), encoding="utf-8")
        print(name, len((HERE / name).read_text(encoding="utf-8")))


if __name__ == "__main__":
    main()

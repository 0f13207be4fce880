"""Run every benchmark in bench/ and print one table of the key figures.

    .venv/bin/python bench/run_all.py [--quick] [--only NAME ...] [--json]

Each benchmark runs as its own subprocess (fresh interpreter, own temporary data dir), its
full output is kept under ``--log-dir`` (default: a temp dir, printed at the end), and the
figures are parsed from the lines it prints. A benchmark that fails or prints something
this parser no longer understands shows up in the table as ``FAILED`` / ``?`` instead of
being dropped, so the table never hides a broken script. Scripts in bench/ that this file
does not know yet still run; they get a row with their exit status and last output line.

``--quick`` shrinks the long runs (fewer turns, fewer loads) for a smoke check; the README
figures come from a full run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
NUMBER = r"([0-9][0-9,]*\.?[0-9]*)"


@dataclass
class Bench:
    """One benchmark invocation and the figures to read from its output."""

    name: str
    script: str
    args: list[str] = field(default_factory=list)
    quick_args: list[str] | None = None
    # figure label -> (regex with one group, unit, target text)
    figures: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    timeout: float = 900.0


def _load_figures(*, target_p95: str = "") -> dict[str, tuple[str, str, str]]:
    """What ws_load.py and ws_load_scale.py print (same format)."""
    return {
        "runs/s": (rf"runs/s={NUMBER}", "runs/s", ""),
        "overhead p50": (r"server overhead per run \(ms\): p50=" + NUMBER, "ms", ""),
        "overhead p95": (r"server overhead per run \(ms\): .*?p95=" + NUMBER, "ms", target_p95),
        "lost (client)": (rf"lost: client={NUMBER}", "", "0"),
        "lost (db)": (rf"lost: .*?db={NUMBER}", "", "0"),
        "duplicated": (rf"duplicated={NUMBER}", "", "0"),
        "garbled": (rf"garbled={NUMBER}", "", "0"),
    }


def _ws_load(clients: int, think: float = 0.0) -> Bench:
    """Back to back (think 0: the server is saturated, overhead is mostly queueing) or
    paced like people (``think`` seconds between turns: the overhead a user feels)."""
    paced = ["--think", f"{think:g}"] if think else []
    return Bench(
        name=f"ws_load {clients}" + (f" think {think:g}s" if think else ""),
        script="ws_load.py",
        args=["--clients", str(clients), "--turns", "5", *paced],
        quick_args=["--clients", str(clients), "--turns", "1", *paced],
        figures=_load_figures(target_p95="<= 50" if think else ""),
    )


def _ws_load_scale(clients: int) -> Bench:
    return Bench(
        name=f"ws_load_scale 2 procs {clients}",
        script="ws_load_scale.py",
        args=["--processes", "2", "--clients", str(clients), "--turns", "5", "--cross"],
        quick_args=["--processes", "2", "--clients", str(clients), "--turns", "1", "--cross"],
        figures={
            **_load_figures(),
            "cross-process missed": (rf"second sockets missed {NUMBER}", "", "0"),
        },
    )


BENCHES = [
    Bench(
        name="tokens",
        script="tokens.py",
        figures={
            "accuracy, mean abs ln ratio": (rf"fimone {NUMBER} \(target", "", "<= 0.10"),
            "mixed throughput": (rf"mixed \(.*?\): fimone {NUMBER} MB/s", "MB/s", ">= 150"),
            "non-ASCII throughput": (rf"non-ASCII \(\d+ files\): {NUMBER} MB/s", "MB/s", ""),
            "per 60-char message": (rf"60-character messages: {NUMBER} µs", "µs", ""),
        },
    ),
    Bench(
        name="guard",
        script="guard.py",
        figures={
            "cold check": (rf"first check \(cold\):\s+median\s+{NUMBER}", "µs", ""),
            "repeated check p50": (rf"repeated \(unchanged\):\s+median\s+{NUMBER}", "µs", ""),
            "repeated check p95": (rf"repeated \(unchanged\):.*?p95 {NUMBER}", "µs", "<= 200"),
            "after a tool round": (rf"after appending a tool round: median\s+{NUMBER}", "µs", ""),
            "over the masking mark": (rf"over the masking mark .*?median\s+{NUMBER}", "µs", ""),
        },
    ),
    Bench(
        name="tool_heavy",
        script="tool_heavy.py",
        figures={
            "(c)/(a) input tokens": (rf"total input tokens {NUMBER}%", "%", "<= 50"),
            "(c)/(a) uncached input tokens": (rf"uncached input tokens {NUMBER}%", "%", ""),
            "(c) summariser calls": (rf"summariser calls {NUMBER}/", "", ""),
            "(c) prefix stable to the compaction point": (
                rf"compaction point {NUMBER}%",
                "%",
                ">= 90",
            ),
            "(c) prefix stable, whole request": (rf"\(whole {NUMBER}%\)", "%", ""),
            "(c) facts reachable": (r"^\(c\) mask, then summarise .*?(\d+)/39$", "/39", "39"),
        },
    ),
    Bench(
        name="calibration",
        script="calibration.py",
        figures={
            "JSON-heavy: english abs error": (
                rf"1: after 50 reports english [+-]?{NUMBER}",
                "%",
                "<= 10",
            ),
            "JSON-heavy: code abs error": (
                rf"1: after 50 reports .*?code [+-]?{NUMBER}",
                "%",
                "<= 10",
            ),
            "Cyrillic 1.2x: russian abs error": (
                rf"3: after 50 reports .*?russian [+-]?{NUMBER}",
                "%",
                "<= 5",
            ),
            "cl100k: largest kind abs error": (
                rf"4: after 50 .*?largest \|error\| {NUMBER}",
                "%",
                "",
            ),
        },
    ),
    Bench(
        name="dbmemory",
        script="dbmemory.py",
        quick_args=["--runs", "3"],
        figures={
            "load, no compaction": (
                rf"everything \(no compaction\)\s+\d+\s+\d+\s+{NUMBER}",
                "ms",
                "",
            ),
            "load, 60K budget": (
                rf"60,000 \(smart_truncate\)\s+\d+\s+\d+\s+{NUMBER}",
                "ms",
                "<= 150",
            ),
            "queries per load": (r"60,000 \(smart_truncate\)\s+(\d+)", "", ""),
        },
    ),
    Bench(
        name="images",
        script="images.py",
        quick_args=["--turns", "20", "--images", "8"],
        figures={
            "ratio lifecycle / every image": (
                r"reference [\d,]+, ratio ([0-9.]+)% \(target",
                "%",
                "<= 25",
            ),
            "image tokens ratio": (r"of which images .*ratio ([0-9.]+)%", "%", ""),
        },
    ),
    Bench(
        name="compaction_cost",
        script="compaction_cost.py",
        quick_args=["--turns", "120"],
        figures={
            # First block: the ideal extractor; second: the offline model.
            "ratio (extractor)": (
                r"input-token ratio persisted / every request: ([0-9.]+)%",
                "%",
                "<= 20",
            ),
            "ratio (offline)": (
                r"summariser: offline model[\s\S]*?input-token ratio persisted / every request: "
                r"([0-9.]+)%",
                "%",
                "<= 20",
            ),
            "facts kept (offline, persisted)": (
                r"summariser: offline model[\s\S]*?persisted summaries"
                r"\s+\d+\s+[\d,]+\s+[\d,]+\s+(\d+)",
                "",
                "",
            ),
        },
    ),
    Bench(
        name="ttft",
        script="ttft.py",
        quick_args=["--turns", "5", "--clients", "10", "--client-turns", "1"],
        figures={
            "server-added p50 (1 client)": (rf"1 client: server-added ms p50={NUMBER}", "ms", ""),
            "server-added p95 (1 client)": (
                rf"1 client: server-added ms .*?p95={NUMBER}",
                "ms",
                "<= 10",
            ),
            "server-added p50 (paced)": (rf"paced clients .*?p50={NUMBER}", "ms", ""),
            "server-added p95 (paced)": (rf"paced clients .*?p95={NUMBER}", "ms", "<= 30"),
        },
    ),
    Bench(
        name="compaction",
        script="compaction.py",
        quick_args=["--calls", "5"],
        figures={
            "500 msgs, one call, cold": (
                r"window 60,000, terse summariser: CPU per call cold median ([0-9.]+) ms",
                "ms CPU",
                "<= 15",
            ),
            "500 msgs, one call, warm": (
                r"window 60,000, terse summariser: .*?warm median ([0-9.]+) ms",
                "ms CPU",
                "",
            ),
            "500 msgs, in rounds, cold": (
                r"window 8,000, terse summariser: CPU per call cold median ([0-9.]+) ms",
                "ms CPU",
                "",
            ),
        },
    ),
    Bench(
        name="loop_stall",
        script="loop_stall.py",
        quick_args=["--clients", "10", "--turns", "1", "--think", "0.5", "--messages", "500"],
        figures={
            "largest stall, paced chat": (
                r"^paced chat: .*?largest stall ([0-9.]+)",
                "ms",
                "<= 20",
            ),
            "of it loop computing": (
                r"^paced chat: .*?loop thread computing ([0-9.]+)",
                "ms",
                "",
            ),
            "largest stall, paced + compaction": (
                r"^paced chat \+ long compaction: .*?largest stall ([0-9.]+)",
                "ms",
                "<= 20",
            ),
            "most loop computing, paced + compaction": (
                r"^paced chat \+ long compaction: .*?most loop-thread computing in a stall "
                r"([0-9.]+)",
                "ms",
                "",
            ),
            "largest stall, back to back + compaction": (
                r"^back-to-back chat \+ long compaction: .*?largest stall ([0-9.]+)",
                "ms",
                "",
            ),
        },
        timeout=1200,
    ),
    Bench(
        name="fetch",
        script="fetch.py",
        quick_args=["--fetches", "5"],
        figures={
            "article p50": (r"^article \(3 kB\): fetch \(ms\) p50=([0-9.]+)", "ms", ""),
            "loop lag, 9,000 paragraphs": (
                r"^9,000 paragraphs .*?loop lag max \(ms\)=([0-9.]+)",
                "ms",
                "",
            ),
            "loop lag, 50 MB cut": (r"^50 MB body.*?loop lag max \(ms\)=([0-9.]+)", "ms", ""),
        },
    ),
    Bench(
        name="fidelity",
        script="fidelity.py",
        quick_args=["--turns", "60"],
        figures={
            "keeps-all 8K": (r"\s8,000 keeps-all\s+(\d+)/", "/50", "50"),
            "keeps-all 24K": (r"24,000 keeps-all\s+(\d+)/", "/50", "50"),
            "offline 8K": (r"\s8,000 offline\s+(\d+)/", "/50", ">= 40"),
            "offline 24K": (r"24,000 offline\s+(\d+)/", "/50", ">= 40"),
            "recall 8K": (r"\s8,000 recall finds (\d+)/", "/50", "50"),
            "guard 1st call 8K": (r"\s8,000 keeps-all(?:\s+\S+){5}\s+(\d+)", "", "0"),
        },
        timeout=1800,
    ),
    _ws_load(50),
    _ws_load(200),
    _ws_load(50, think=5.0),
    _ws_load(200, think=20.0),
    _ws_load_scale(50),
]


@dataclass
class Outcome:
    bench: Bench
    returncode: int | None
    seconds: float
    output: str
    figures: dict[str, str]


def run(bench: Bench, *, quick: bool, log_dir: Path) -> Outcome:
    args = bench.quick_args if quick and bench.quick_args is not None else bench.args
    cmd = [sys.executable, str(BENCH / bench.script), *args]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.setdefault("FIMONE_DATA_DIR", tempfile.mkdtemp(prefix="fimone-bench-all-"))
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd,
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=bench.timeout,
            check=False,
        )
        code, output = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        code = None
        output = (
            (exc.stdout or b"").decode(errors="replace")
            if isinstance(exc.stdout, bytes)
            else (exc.stdout or "")
        )
    seconds = time.perf_counter() - started
    (log_dir / f"{bench.name.replace(' ', '_')}.log").write_text(
        f"$ {' '.join(cmd)}\n{output}", encoding="utf-8"
    )
    figures = {}
    for label, (pattern, _unit, _target) in bench.figures.items():
        match = re.search(pattern, output, re.MULTILINE)
        figures[label] = match.group(1).replace(",", "") if match else "?"
    return Outcome(bench, code, seconds, output, figures)


def table(outcomes: list[Outcome]) -> str:
    rows = [("benchmark", "figure", "value", "target")]
    for o in outcomes:
        if o.returncode != 0:
            status = "TIMEOUT" if o.returncode is None else f"FAILED (exit {o.returncode})"
            last = (o.output.strip().splitlines() or [""])[-1][:60]
            rows.append((o.bench.name, status, last, ""))
            continue
        for label, (_p, unit, target) in o.bench.figures.items():
            value = o.figures[label]
            rows.append((o.bench.name, label, f"{value} {unit}".strip(), target))
        if not o.bench.figures:
            last = (o.output.strip().splitlines() or [""])[-1][:60]
            rows.append((o.bench.name, "(output)", last, ""))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}, {platform.system()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs (smoke check)")
    parser.add_argument(
        "--only", nargs="*", help="benchmark names to run (e.g. tokens 'ws_load 50')"
    )
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    parser.add_argument("--log-dir", type=Path, default=None)
    args = parser.parse_args()

    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="fimone-bench-logs-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    known = {b.script for b in BENCHES}
    benches = list(BENCHES) + [
        Bench(name=p.stem, script=p.name)
        for p in sorted(BENCH.glob("*.py"))
        if p.name not in known and p.name != Path(__file__).name and not p.name.startswith("_")
    ]
    if args.only:
        benches = [b for b in benches if b.name in args.only or b.script in args.only]

    outcomes = []
    for bench in benches:
        print(f"running {bench.name} ...", file=sys.stderr, flush=True)
        outcome = run(bench, quick=args.quick, log_dir=log_dir)
        print(f"  {outcome.seconds:.1f} s, exit {outcome.returncode}", file=sys.stderr, flush=True)
        outcomes.append(outcome)

    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"fimone benchmarks, {stamp}; {machine()}{' (quick)' if args.quick else ''}")
    print(table(outcomes))
    print(f"full output of each benchmark: {log_dir}")
    if args.json:
        print(json.dumps({o.bench.name: o.figures for o in outcomes}))
    failed = [o for o in outcomes if o.returncode != 0 or "?" in o.figures.values()]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

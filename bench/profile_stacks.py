"""Sum a py-spy profile (``--format raw``: one collapsed stack and its sample count a line)
per function, divided by the runs it covered.

    .venv/bin/python bench/ws_load.py --clients 50 --profile /tmp/server.stacks
    .venv/bin/python bench/profile_stacks.py /tmp/server.stacks --runs 250 [--match chat/]

Prints the samples of each function counted once per stack it is on (inclusive), as
milliseconds per run (``--rate``: py-spy's samples per second, ws_load's 250 by default)
and as a share of all samples, largest first. ``--match`` keeps the functions whose
name or file matches a regular expression (fimone's own code, a library).
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

_LINE = re.compile(r":\d+\)")  # py-spy's "(file.py:123)": the same function on any line


def inclusive_samples(lines: list[str]) -> tuple[Counter, int]:
    """Samples per function (each counted once per stack) and the total."""
    per_function: Counter = Counter()
    total = 0
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples = int(count)
        total += samples
        for function in {_LINE.sub(")", frame) for frame in stack.split(";")}:
            per_function[function] += samples
    return per_function, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path")
    parser.add_argument("--runs", type=float, required=True, help="runs the profile covered")
    parser.add_argument("--rate", type=float, default=250.0, help="py-spy's samples/s")
    parser.add_argument("--match", help="only functions matching this regular expression")
    parser.add_argument("--top", type=int, default=60)
    args = parser.parse_args()

    per_function, total = inclusive_samples(Path(args.path).read_text().splitlines())
    match = re.compile(args.match) if args.match else None
    ms_per_sample = 1000.0 / args.rate
    print(f"{total} samples, {total * ms_per_sample / args.runs:.2f} ms per run (GIL held)")
    shown = 0
    for function, samples in per_function.most_common():
        if match and not match.search(function):
            continue
        share = samples * 100 / total
        print(f"{samples * ms_per_sample / args.runs:8.2f} ms {share:5.1f}%  {function[:140]}")
        shown += 1
        if shown >= args.top:
            break


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Reads the log of shims alternated in rounds, one process each, as the GPU calls of docs/performance.md write
it (`.gpu/*.sh`, kept as `run.sh` in bench/results/): one line a process,

    r<ROUND> <ARM> <CONFIGURATION> ... BENCH <measure> <value> us ...

(e.g. `r3 new beyond-write BENCH launch_call_off_median 5.69 us BENCH launch_call_added_beyond_write 0.18 us`),
and prints, for each configuration, each arm's median over its processes with a 95% bootstrap interval, its
range and how many processes came out within `--bound`, the arms' paired differences by round, and all arms
pooled. The measure read from a line is the last `BENCH *added*` one on it (the shim's cost; the `off_median`
beside it is the process's pace).

    bench/rounds.py LOG [LOG...] [--bound CONFIGURATION=US ...] [--pair A-B ...]

Several logs are read as one; rounds keep their numbers within a log only (a log's rounds are told apart from
another's). Standard library and harness.median_interval only.
"""

import argparse
import re
import statistics
import sys

from harness import median_interval

LINE = re.compile(r"^r(\d+)\s+(\S+)\s+(\S+)\s")
ADDED = re.compile(r"BENCH (\S*added\S*) (-?[0-9.]+) us")


def read_rounds(paths):
    """{(configuration, arm): {round key: microseconds}}; a round key is (log's index, round)."""
    values = {}
    for index, path in enumerate(paths):
        with open(path, encoding="utf-8") as log:
            for line in log:
                head = LINE.match(line)
                added = ADDED.findall(line)
                if not head or not added:
                    continue
                number, arm, configuration = head.groups()
                values.setdefault((configuration, arm), {})[(index, int(number))] = float(added[-1][1])
    return values


def cell(values, bound=None):
    low, high = median_interval(values)
    text = f"{statistics.median(values):.3f} [{low:.3f}, {high:.3f}]"
    within = "-" if bound is None else f"{sum(value <= bound for value in values)}/{len(values)}"
    return text, f"{min(values):.3f}-{max(values):.3f}", within


def difference(a, b):
    rounds = sorted(set(a) & set(b))
    values = [a[key] - b[key] for key in rounds]
    if not values:
        return None
    low, high = median_interval(values)
    return f"{statistics.median(values):+.3f} [{low:+.3f}, {high:+.3f}] n={len(values)}"


def render(values, bounds, pairs):
    lines = []
    for configuration in sorted({key[0] for key in values}):
        arms = sorted(arm for (c, arm) in values if c == configuration)
        bound = bounds.get(configuration)
        lines.append(f"{configuration}" + (f" (bound {bound} us)" if bound is not None else ""))
        lines.append("| arm | n | us a launch call, median [95%] | range | within the bound |")
        lines.append("|---|---|---|---|---|")
        pooled = []
        for arm in arms:
            measured = list(values[(configuration, arm)].values())
            pooled += measured
            text, spread, within = cell(measured, bound)
            lines.append(f"| {arm} | {len(measured)} | {text} | {spread} | {within} |")
        if len(arms) > 1:
            text, spread, within = cell(pooled, bound)
            lines.append(f"| all arms | {len(pooled)} | {text} | {spread} | {within} |")
        for a, b in pairs or [(a, b) for i, a in enumerate(arms) for b in arms[i + 1:]]:
            if (configuration, a) in values and (configuration, b) in values:
                paired = difference(values[(configuration, a)], values[(configuration, b)])
                if paired:
                    lines.append(f"paired by round, {a} - {b}: {paired}")
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("logs", nargs="+")
    parser.add_argument("--bound", action="append", default=[], metavar="CONFIGURATION=US",
                        help="count the processes of CONFIGURATION that came out at or under US")
    parser.add_argument("--pair", action="append", default=[], metavar="A-B",
                        help="the paired differences to print (default: every pair of arms)")
    args = parser.parse_args(argv)
    bounds = {}
    for text in args.bound:
        configuration, _, us = text.partition("=")
        try:
            bounds[configuration] = float(us)
        except ValueError:
            parser.error(f"--bound {text}: expected CONFIGURATION=MICROSECONDS, e.g. nothing=0.15")
    pairs = []
    for text in args.pair:
        a, _, b = text.partition("-")
        if not a or not b:
            parser.error(f"--pair {text}: expected two arms as A-B, e.g. new-old")
        pairs.append((a, b))
    values = read_rounds(args.logs)
    if not values:
        sys.exit(f"rounds.py: no 'rN ARM CONFIGURATION ... BENCH *added* VALUE us' line in {', '.join(args.logs)}")
    print(render(values, bounds, pairs), end="")


if __name__ == "__main__":
    main()

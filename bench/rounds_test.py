#!/usr/bin/env python3
"""CI test of bench/rounds.py on made-up logs: which lines it reads (the last `BENCH *added*` value of each
`rN ARM CONFIGURATION` line), the medians, bound counts and paired differences it prints, rounds of two logs
kept apart, and a clear error for a log with no such line.

    rounds_test.py SCRATCH_DIR
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rounds  # noqa: E402

scratch = sys.argv[1]
first = os.path.join(scratch, "rounds-first.log")
second = os.path.join(scratch, "rounds-second.log")
with open(first, "w", encoding="utf-8") as log:
    log.write("f0d104b\nseconds: 294\n")
    for number, (old, new) in enumerate([(0.30, 0.20), (0.10, 0.05), (0.20, 0.15)], start=1):
        log.write(f"r{number} old beyond-write [cuda-blockrun] summary: 1 launches BENCH launch_call_off_median "
                  f"5.5 us BENCH launch_call_added_beyond_write {old} us \n")
        log.write(f"r{number} new beyond-write BENCH launch_call_off_median 5.5 us "
                  f"BENCH launch_call_added_beyond_write {new} us \n")
        log.write(f"r{number} new nothing BENCH launch_call_off_median 4.0 us BENCH launch_call_added 0.1{number} us \n")
    log.write("r4 new beyond-write timeout: no BENCH line\n")
with open(second, "w", encoding="utf-8") as log:
    log.write("r1 new beyond-write BENCH launch_call_added_beyond_write 0.25 us\n")

values = rounds.read_rounds([first, second])
assert values[("beyond-write", "old")] == {(0, 1): 0.30, (0, 2): 0.10, (0, 3): 0.20}, values
assert values[("beyond-write", "new")] == {(0, 1): 0.20, (0, 2): 0.05, (0, 3): 0.15, (1, 1): 0.25}, values
assert values[("nothing", "new")] == {(0, 1): 0.11, (0, 2): 0.12, (0, 3): 0.13}, values

out = subprocess.run([sys.executable, os.path.join(HERE, "rounds.py"), first, second, "--bound", "beyond-write=0.2",
                      "--pair", "new-old"], capture_output=True, text=True, check=True).stdout
expected = [
    "beyond-write (bound 0.2 us)",
    "| new | 4 | 0.175 [",  # the second log's round 1 is its own: four processes
    "| 0.050-0.250 | 3/4 |",
    "| old | 3 | 0.200 [",
    "| all arms | 7 | 0.200 [",
    "paired by round, new - old: -0.050 [",  # only the first log's three rounds pair up
    "] n=3",
    "nothing\n| arm |",
    "| new | 3 | 0.120 [",
]
for text in expected:
    assert text in out, f"{text!r} not in:\n{out}"
assert "paired by round, old - new" not in out, out

empty = os.path.join(scratch, "rounds-empty.log")
with open(empty, "w", encoding="utf-8") as log:
    log.write("seconds: 3\n")
failed = subprocess.run([sys.executable, os.path.join(HERE, "rounds.py"), empty], capture_output=True, text=True)
assert failed.returncode != 0 and "no 'rN ARM CONFIGURATION" in failed.stderr, failed
bad = subprocess.run([sys.executable, os.path.join(HERE, "rounds.py"), first, "--bound", "nothing"],
                     capture_output=True, text=True)
assert bad.returncode == 2 and "--bound nothing: expected CONFIGURATION=MICROSECONDS" in bad.stderr, bad
print("rounds_test: OK")

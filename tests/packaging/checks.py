"""What the packaging tests share: a check that prints and counts, and a command that shows its output when it
fails (or with VERBOSE set)."""
import os
import subprocess
import sys

failures = []


def check(ok, what):
    print(("ok      " if ok else "FAILED  ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(command, **options):
    print("$ " + " ".join(command), flush=True)
    result = subprocess.run(command, capture_output=True, text=True, **options)
    if result.returncode != 0 or os.environ.get("VERBOSE"):
        sys.stdout.write(result.stdout + result.stderr)
    return result
# SPDX-License-Identifier: MIT

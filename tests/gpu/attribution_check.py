"""Checks one run of tests/gpu/attribution_case.sh (issue 16): a report's first_error, or --localize's verdict,
against the faulting kernel (a regular expression) and the line marked in the program's source.

  attribution_check.py report   --case C --mode M --report PATH --regex RE --kind native|python
                                --source FILE --line N [--line-policy fail|warn] [--status S]
  attribution_check.py localize --case C --log PATH --regex RE --kind native|python --source FILE --line N
                                [--line-policy fail|warn] [--reports-dir DIR] [--status S]
  (both: [--run-problem TEXT], what went wrong with the run itself, e.g. a timeout: a failure)

Prints what it read, then one `MATRIX <case> <mode> kernel=<ok|wrong|none> line=<ok|wrong|none> exact=<yes|no>
wrong_exact=<yes|no>` line and one `RESULT <case> <mode> <pass|warn|fail>` line (localize: also `LOCALIZE <case>
runs=<1|2|?> ...`), appended to $GPU_MATRIX_OUT too when it is set. Every problem is a line starting with
`FAILED (<mode>):` (exit status 1) or `WARN (<mode>):` (exit status 0).

What each mode requires (docs/report.md for the fields):
  every mode   a first_error record; an `exact` first_error whose launch is not the faulting kernel is a failure
               (printed as WRONG EXACT)
  plain        nothing more; a non-exact first_error without the faulting kernel among launch + suspects: WARN
  breadcrumbs  exact, the faulting kernel; python: launch.python_callsite is <source>:<marker line>; native:
               launch.callsite is, where it names a line of <source> (no call site, or one in another file,
               e.g. a Thrust/CUB header: WARN)
  block-kernel the faulting kernel is the launch, exact or not (the earlier launches were not waited for)
  block-all    the same
  localize     the verdict `localize: culprit: ...` names the faulting kernel, and (python) `python: ...file:line`
               or (native) `launched at ...file:line` is the marker's (native: WARN when in another file or absent)
--line-policy warn turns every line mismatch into a WARN (torch.compile: the launching Python frame is inductor's
generated code, not the program's).
"""
import argparse
import json
import os
import re
import sys

MODES_NEEDING_EXACT = ("breadcrumbs", "block-all")
# --block NAME without breadcrumbs: the blocked launch is named, but the launches before it were not waited for
# and may have faulted instead, so it is exact only when nothing else was unfinished (docs/report.md).
MODES_NEEDING_THE_LAUNCH = ("block-kernel",)


class Outcome:
    def __init__(self, case, mode):
        self.case, self.mode = case, mode
        self.kernel, self.line, self.exact, self.wrong_exact = "none", "none", "no", "no"
        self.failures, self.warnings = [], []
        self.extra = []  # further summary lines (LOCALIZE ...)

    def fail(self, text):
        self.failures.append(text)
        print(f"FAILED ({self.mode}): {text}", flush=True)

    def warn(self, text):
        self.warnings.append(text)
        print(f"WARN ({self.mode}): {text}", flush=True)

    def finish(self):
        result = "fail" if self.failures else "warn" if self.warnings else "pass"
        lines = [f"MATRIX {self.case} {self.mode} kernel={self.kernel} line={self.line} exact={self.exact} "
                 f"wrong_exact={self.wrong_exact}",
                 f"RESULT {self.case} {self.mode} {result}"] + self.extra
        for line in lines:
            print(line, flush=True)
        target = os.environ.get("GPU_MATRIX_OUT")
        if target:
            with open(target, "a") as out:
                out.write("".join(line + "\n" for line in lines))
        return 1 if self.failures else 0


def short(text, limit=300):
    text = text or ""
    return text if len(text) <= limit else text[:limit] + f"...({len(text)} chars)"


def kernel_matches(regex, launch):
    if not launch:
        return False
    return any(regex.search(launch.get(field) or "") for field in ("kernel", "kernel_base", "kernel_mangled"))


def site_text(site):
    if not site:
        return "none"
    where = f"{site.get('file')}:{site.get('line')}" if site.get("file") else (
        f"{site.get('module') or '?'}+{site.get('offset') or '?'}")
    return f"{where} in {short(site.get('function') or '?', 120)}"


def describe(launch):
    if not launch:
        return "none"
    name = launch.get("kernel") or launch.get("api") or "?"
    return (f"#{launch.get('seq')} {short(name, 400)} (kernel_base {short(launch.get('kernel_base'), 200)!r}, its "
            f"launch {launch.get('kernel_launch')}), api {launch.get('api')}/{launch.get('driver_api')}, stream "
            f"{launch.get('stream')}, blocked {launch.get('blocked')}; callsite {site_text(launch.get('callsite'))}"
            f" (stack {launch.get('stack')}); python_callsite {site_text(launch.get('python_callsite'))} "
            f"({launch.get('python_status')})")


def marker_in_frames(launch, kind, source, line):
    """Whether <source>:<line> is among the launch's whole stack (native frames or Python frames)."""
    frames = launch.get("frames") if kind == "native" else launch.get("python")
    if frames is None:
        return "frames not kept"
    found = any(os.path.basename(f.get("file") or "") == source and f.get("line") == line for f in frames)
    return "yes" if found else f"no ({len(frames)} frames)"


def line_of(launch, kind):
    """(file, line) of the launch's own line: python_callsite (python) or callsite (native), or None."""
    site = launch.get("python_callsite" if kind == "python" else "callsite") or {}
    if not site.get("file") or site.get("line") is None:
        return None
    return site.get("file"), site.get("line")


def judge_line(outcome, found, kind, source, line, required, policy, what):
    """Sets outcome.line from `found` ((file, line) or None); a mismatch is a failure only where `required`, the
    policy is `fail`, and (native) the call site is in the program's source: otherwise a WARN (or, for a line
    absent where none is required, a note)."""
    expected = f"{source}:{line}"
    if found is None:
        outcome.line = "none"
        text = f"{what}: none in the record, expected {expected}"
        if not required:
            print(f"note ({outcome.mode}): {text} (not required in this mode)", flush=True)
        elif kind == "native":
            outcome.warn(text + " (a native call site can be missing with the static runtime: not a failure)")
        elif policy == "fail":
            outcome.fail(text)
        else:
            outcome.warn(text + " (--line-policy warn)")
        return
    file, number = found
    if os.path.basename(file) == source and number == line:
        outcome.line = "ok"
        print(f"OK ({outcome.mode}): {what} is {expected}", flush=True)
        return
    outcome.line = "wrong"
    text = f"{what} is {file}:{number}, expected {expected}"
    if kind == "native" and os.path.basename(file) != source:
        # The launch's caller is library code inlined into the program (Thrust/CUB headers): the program's own
        # line is further out, which the first-own-frame rule does not reach.
        outcome.warn(text + " (another file: library code inlined into the program; not a failure)")
    elif not required:
        outcome.warn(text + " (not required in this mode)")
    elif policy == "fail":
        outcome.fail(text)
    else:
        outcome.warn(text + " (--line-policy warn)")


def read_records(path, outcome):
    records, broken = [], 0
    with open(path, errors="replace") as report:
        for text in report:
            if not text.strip():
                continue
            try:
                records.append(json.loads(text))
            except ValueError:
                broken += 1
    if broken:
        print(f"note ({outcome.mode}): {broken} report line(s) were not JSON (cut short by a kill?)", flush=True)
    return records


def check_report(args):
    outcome = Outcome(args.case, args.mode)
    regex = re.compile(args.regex)
    source = os.path.basename(args.source)
    if args.run_problem:
        outcome.fail(args.run_problem)
    if not os.path.isfile(args.report):
        outcome.fail(f"no report file {args.report}: the shim wrote nothing (program exit status {args.status}; "
                     "did the program use CUDA with the shim active?)")
        return outcome.finish()
    records = read_records(args.report, outcome)
    starts = [r for r in records if r.get("type") == "start"]
    errors = [r for r in records if r.get("type") == "first_error"]
    summaries = [r for r in records if r.get("type") == "summary"]
    print(f"report ({args.mode}): {len(records)} records from {len(starts)} process(es): "
          f"{[r.get('type') for r in records]}", flush=True)
    for start in starts:
        print(f"report ({args.mode}): process {start.get('pid')} ({start.get('process')}), driver "
              f"{start.get('cuda_driver_version')}, runtime {start.get('cuda_runtime_version')}, shim "
              f"{start.get('shim_version')}", flush=True)
    for summary in summaries:
        print(f"report ({args.mode}): summary: {summary.get('launches')} launches, "
              f"{summary.get('blocked')} blocked, first_error {summary.get('first_error')!r}, later_errors "
              f"{summary.get('later_errors')}", flush=True)
    for signal in (r for r in records if r.get("type") == "fatal_signal"):
        print(f"report ({args.mode}): fatal_signal {signal.get('signal')} handed to {signal.get('handed_to')}",
              flush=True)
    if not errors:
        outcome.fail(f"no first_error record: the shim reported no CUDA error (expected the fault in a kernel "
                     f"matching /{args.regex}/; program exit status {args.status})")
        return outcome.finish()
    if len(errors) > 1:
        print(f"note ({args.mode}): {len(errors)} first_error records (several processes); the earliest counts",
              flush=True)
    first = min(errors, key=lambda r: r.get("time") or 0)
    launch = first.get("launch")
    suspects = first.get("suspects") or []
    print(f"report ({args.mode}): first_error {first.get('error')} ({first.get('code')}, {first.get('layer')}): "
          f"{first.get('message')}; returned by {first.get('surfaced_api')} ({first.get('how')}); certainty "
          f"{first.get('certainty')}, method {first.get('method')}, pin_rule {first.get('pin_rule')!r}", flush=True)
    if first.get("driver_log"):
        print(f"report ({args.mode}): driver_log {short(json.dumps(first.get('driver_log')), 600)}", flush=True)
    print(f"report ({args.mode}): launch: {describe(launch)}", flush=True)
    for number, suspect in enumerate(suspects, 1):
        print(f"report ({args.mode}): suspect {number}: {describe(suspect)}", flush=True)

    exact = first.get("certainty") == "exact" and launch is not None
    outcome.exact = "yes" if exact else "no"
    culprit = None
    if exact:
        if kernel_matches(regex, launch):
            outcome.kernel = "ok"
            culprit = launch
            print(f"OK ({args.mode}): exact, and the launch is the faulting kernel", flush=True)
        else:
            outcome.kernel = "wrong"
            outcome.wrong_exact = "yes"
            print(f"WRONG EXACT ({args.mode}): the report names {describe(launch)} exactly, but the faulting "
                  f"kernel matches /{args.regex}/", flush=True)
            outcome.fail(f"WRONG EXACT: certainty exact (method {first.get('method')}) names "
                         f"{short(launch.get('kernel') or launch.get('api'), 200)!r}, expected a kernel matching "
                         f"/{args.regex}/")
    else:
        candidates = ([launch] if launch else []) + suspects
        culprit = next((c for c in candidates if kernel_matches(regex, c)), None)
        if culprit is not None:
            outcome.kernel = "ok"
            position = candidates.index(culprit) + 1
            print(f"OK ({args.mode}): not exact ({first.get('certainty')}); the faulting kernel is candidate "
                  f"{position} of {len(candidates)}", flush=True)
        else:
            outcome.kernel = "wrong" if candidates else "none"
        if args.mode in MODES_NEEDING_THE_LAUNCH and not (launch and kernel_matches(regex, launch)):
            outcome.fail(f"expected the blocked faulting kernel (/{args.regex}/) as the launch, exact or not; found "
                         f"{describe(launch)}")
        if args.mode in MODES_NEEDING_EXACT:
            outcome.fail(f"expected certainty exact naming a kernel matching /{args.regex}/, found certainty "
                         f"{first.get('certainty')!r} (method {first.get('method')}) with {len(candidates)} "
                         f"candidate(s), the faulting kernel {'among' if culprit else 'NOT among'} them")
        elif culprit is None:
            outcome.warn(f"not exact ({first.get('certainty')}), and no kernel matching /{args.regex}/ is the "
                         f"launch or among the {len(suspects)} suspects (a warning in this mode)")
    if culprit is not None:
        required = args.mode == "breadcrumbs"
        what = "the Python line (launch.python_callsite)" if args.kind == "python" else \
            "the call site (launch.callsite)"
        judge_line(outcome, line_of(culprit, args.kind), args.kind, source, args.line, required, args.line_policy,
                   what)
        print(f"note ({args.mode}): the marker {source}:{args.line} among the launch's "
              f"{'Python' if args.kind == 'python' else 'native'} frames: "
              f"{marker_in_frames(culprit, args.kind, source, args.line)}", flush=True)
    return outcome.finish()


VERDICT = "] localize: culprit: "
CONTINUATION = "[cuda-blockrun]   "


def check_localize(args):
    outcome = Outcome(args.case, "localize")
    regex = re.compile(args.regex)
    source = os.path.basename(args.source)
    if args.run_problem:
        outcome.fail(args.run_problem)
    with open(args.log, errors="replace") as log:
        lines = log.read().splitlines()
    said = [l for l in lines if l.startswith("[cuda-blockrun] localize:")]
    for line in said:
        print(f"localize said: {short(line, 600)}", flush=True)
    runs = "?"
    if any("No second run needed" in l for l in lines):
        runs = "1"
    elif any(l.startswith("[cuda-blockrun] localize: run 1: ") and "; run 2: " in l for l in lines):
        runs = "2"
    start = next((i for i, l in enumerate(lines) if VERDICT in l), None)
    verdict = []
    if start is not None:
        verdict = [lines[start].split(VERDICT, 1)[1]]
        for line in lines[start + 1:]:
            if not line.startswith(CONTINUATION):
                break
            verdict.append(line[len(CONTINUATION):].strip())
    print(f"localize ({args.case}): {'one run: No second run needed' if runs == '1' else 'a second run' if runs == '2' else 'runs unknown'}"
          f"; program exit status {args.status}", flush=True)
    outcome.extra.append(f"LOCALIZE {args.case} runs={runs} verdict={'culprit' if verdict else 'none'}")
    if args.reports_dir and os.path.isdir(args.reports_dir):
        for name in sorted(os.listdir(args.reports_dir)):
            path = os.path.join(args.reports_dir, name)
            try:
                records = [json.loads(t) for t in open(path, errors="replace") if t.strip().startswith("{")]
            except ValueError:
                records = []
            for first in (r for r in records if r.get("type") == "first_error"):
                print(f"localize report {name}: {first.get('error')} by {first.get('surfaced_api')}, certainty "
                      f"{first.get('certainty')}, method {first.get('method')}, pin_rule {first.get('pin_rule')!r};"
                      f" launch {describe(first.get('launch'))}", flush=True)
    if not verdict:
        if any("no CUDA error in run 1" in l for l in said):
            outcome.fail("localize found no CUDA error in run 1 (expected the fault in a kernel matching "
                         f"/{args.regex}/)")
        else:
            candidates = [l for l in lines if l.startswith("[cuda-blockrun]     ")]
            among = any(regex.search(l) for l in candidates)
            outcome.kernel = "ok" if among else "wrong" if candidates else "none"
            outcome.fail(f"no verdict line '[cuda-blockrun] localize: culprit: ...' (expected one naming a kernel "
                         f"matching /{args.regex}/); {len(candidates)} candidate line(s), the faulting kernel "
                         f"{'among' if among else 'not among'} them")
        return outcome.finish()
    for line in verdict:
        print(f"verdict: {short(line, 600)}", flush=True)
    outcome.exact = "yes"
    culprit = verdict[0]
    # `kernel NAME<<<GRID, BLOCK, SHARED, STREAM>>>, launch #N (BASE#K)` or `graph launch NAME, launch #N, stream S`:
    # the regex is matched against NAME (it may be anchored).
    named = re.match(r"^(?:kernel|graph launch) (.*?)(?:<<<.*>>>)?(?:, launched by .*)?, launch #\d+", culprit)
    if regex.search(named.group(1) if named else culprit):
        outcome.kernel = "ok"
        print("OK (localize): the culprit is the faulting kernel", flush=True)
    else:
        outcome.kernel = "wrong"
        outcome.wrong_exact = "yes"
        print(f"WRONG EXACT (localize): the verdict's culprit is {short(culprit, 400)!r}, but the faulting kernel "
              f"matches /{args.regex}/", flush=True)
        outcome.fail(f"WRONG EXACT: the verdict names {short(culprit, 200)!r}, expected a kernel matching "
                     f"/{args.regex}/")
    if args.kind == "python":
        pattern, what = re.compile(r"^python: (.*):(\d+) in "), "the verdict's 'python: file:line'"
    else:
        pattern, what = re.compile(r"^launched at (.*):(\d+) in "), "the verdict's 'launched at file:line'"
    found = None
    for line in verdict[1:]:
        match = pattern.match(line)
        if match:
            found = (match.group(1), int(match.group(2)))
            break
    judge_line(outcome, found, args.kind, source, args.line, True, args.line_policy, what)
    return outcome.finish()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("report", "localize"))
    parser.add_argument("--case", required=True)
    parser.add_argument("--mode", default="localize")
    parser.add_argument("--report")
    parser.add_argument("--log")
    parser.add_argument("--reports-dir")
    parser.add_argument("--regex", required=True)
    parser.add_argument("--kind", choices=("native", "python"), required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--line", type=int, required=True)
    parser.add_argument("--line-policy", choices=("fail", "warn"), default="fail")
    parser.add_argument("--status", default="?")
    parser.add_argument("--run-problem", default="", help="what went wrong with the run itself (a failure)")
    args = parser.parse_args()
    if args.what == "report":
        if not args.report:
            parser.error("report needs --report")
        return check_report(args)
    if not args.log:
        parser.error("localize needs --log")
    return check_localize(args)


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: MIT

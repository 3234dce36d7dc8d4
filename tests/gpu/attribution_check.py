"""Checks one run of tests/gpu/attribution_case.sh (issues 16 and 38): a report's first_error, or --localize's
verdict, against the faulting launch (a regular expression for its kernel, and optional expected fields of the
launch record) and the line marked in the program's source.

  attribution_check.py report   --case C --mode M --report PATH --regex RE --kind native|python
                                --source FILE --line N [--line-policy fail|warn] [--status S] [--concurrent]
                                [--expect FIELD=VALUE ...] [--wrapper PATH --work DIR --hint-timeout S]
                                [-- PROGRAM...]
  attribution_check.py localize --case C --log PATH --regex RE --kind native|python --source FILE --line N
                                [--mode M] [--line-policy fail|warn] [--reports-dir DIR] [--status S]
                                [--expect FIELD=VALUE ...]
  (both: [--run-problem TEXT], what went wrong with the run itself, e.g. a timeout: a failure)

Prints what it read, then one `MATRIX <case> <mode> kernel=<ok|wrong|none> line=<ok|wrong|none> exact=<yes|no>
wrong_exact=<yes|no>` line (the default mode adds `hint=<none|ran> hint_runs=<N|?|->`) and one `RESULT <case>
<mode> <pass|warn|fail>` line (localize: also `LOCALIZE <case> runs=<1|2|3|?> ...`), appended to $GPU_MATRIX_OUT
too when it is set. Every problem is a line starting with `FAILED (<mode>):` (exit status 1) or `WARN (<mode>):`
(exit status 0).

The faulting launch: a launch record whose kernel, kernel_base or kernel_mangled matches --regex and whose fields
named by --expect have the values given (`thread_launch=31`, `kernel_launch=8`, `grid=12288,1,1`): for a kernel
that other launches share (several threads launching it, an earlier good launch), the regex alone does not tell
the launches apart. A field the record lacks (a shim from before it was added) is not checked: a WARN.

What each mode requires (docs/report.md for the fields):
  every mode   a first_error record; an `exact` first_error whose launch is not the faulting launch is a failure
               (printed as WRONG EXACT); a non-exact one whose suspects do not hold the faulting launch while the
               report says they are all that could have faulted (`suspects_cut` false) is a failure too
  plain        (--breadcrumbs=0, the bare shim) nothing more; the faulting launch not among launch + suspects: WARN
  default      (no mode flag: the user's first try) either exact, the faulting launch, and its line as breadcrumbs
               must have it; or not exact with a `localize_command`, which is then run (its leading
               `cuda-blockrun` replaced by --wrapper, in this directory, --hint-timeout seconds) and its verdict
               checked as the localize mode's. Not exact without one: a failure ("a hint that can pin nothing
               is a defect")
  breadcrumbs  exact, the faulting launch; python: launch.python_callsite is <source>:<marker line>; native:
               launch.callsite is, where it names a line of <source> (no call site, or one in another file,
               e.g. a Thrust/CUB header: WARN)
  block-kernel the faulting launch is the launch, exact or not (the earlier launches were not waited for)
  block-all    exact, the faulting launch
  localize     the verdict `localize: culprit: ...` names the faulting kernel (and, where it shows them, the
               expected grid and launch numbers), and (python) `python: ...file:line` or (native)
               `launched at ...file:line` is the marker's (native: WARN when in another file or absent); every
               exact first_error in its runs' reports (--reports-dir) is the faulting launch
--concurrent (several streams or host threads in flight: ATTRIBUTION_CONCURRENT=1) turns breadcrumbs', block-kernel's
and block-all's "exact, the faulting launch" into "exact, the faulting launch, or not exact with it among launch +
suspects" (a sticky error reaches whichever stream's synchronize comes first); a WRONG EXACT still fails, and
localize and default are unchanged.
--line-policy warn turns every line mismatch into a WARN (for a case being written, before its line is known).
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

MODES_NEEDING_EXACT = ("breadcrumbs", "block-all")
# --block NAME without breadcrumbs: the blocked launch is named, but the launches before it were not waited for
# and may have faulted instead, so it is exact only when nothing else was unfinished (docs/report.md).
MODES_NEEDING_THE_LAUNCH = ("block-kernel",)
# With several streams or threads in flight, a blocked launch's synchronize (or the breadcrumbs) may see the
# fault of another stream's launch while that one is unfinished: exact is then not provable.
MODES_RELAXED_WHEN_CONCURRENT = ("breadcrumbs", "block-kernel", "block-all")
# The modes whose exact culprit must come with its line (breadcrumbs keep every launch's Python line).
MODES_NEEDING_THE_LINE = ("breadcrumbs", "default")


class Outcome:
    def __init__(self, case, mode):
        self.case, self.mode = case, mode
        self.kernel, self.line, self.exact, self.wrong_exact = "none", "none", "no", "no"
        self.failures, self.warnings = [], []
        self.fields = []  # further `key=value` words of the MATRIX line
        self.extra = []  # further summary lines (LOCALIZE ...)

    def fail(self, text):
        self.failures.append(text)
        print(f"FAILED ({self.mode}): {text}", flush=True)

    def warn(self, text):
        self.warnings.append(text)
        print(f"WARN ({self.mode}): {text}", flush=True)

    def wrong(self, text):
        """An exact claim naming another launch."""
        self.kernel = "wrong"
        self.wrong_exact = "yes"
        print(f"WRONG EXACT ({self.mode}): {text}", flush=True)
        self.fail(f"WRONG EXACT: {text}")

    def finish(self):
        result = "fail" if self.failures else "warn" if self.warnings else "pass"
        lines = [" ".join([f"MATRIX {self.case} {self.mode} kernel={self.kernel} line={self.line} "
                           f"exact={self.exact} wrong_exact={self.wrong_exact}"] + self.fields),
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


def parse_expect(text):
    """`FIELD=VALUE`: VALUE an integer, a comma-separated list of integers (a dim3), or a string."""
    field, sep, value = text.partition("=")
    if not sep or not field:
        raise argparse.ArgumentTypeError(f"--expect wants FIELD=VALUE, not {text!r}")
    if re.fullmatch(r"-?\d+", value):
        return field, int(value)
    if re.fullmatch(r"-?\d+(,-?\d+)+", value):
        return field, [int(v) for v in value.split(",")]
    return field, value


def show_value(value):
    return ",".join(str(v) for v in value) if isinstance(value, list) else str(value)


class Faulting:
    """What the faulting launch looks like: its kernel's regex and the expected fields of its record."""

    def __init__(self, regex, expect):
        self.regex = re.compile(regex)
        self.pattern = regex
        self.expect = dict(expect or [])

    def kernel_matches(self, launch):
        if not launch:
            return False
        return any(self.regex.search(launch.get(field) or "")
                   for field in ("kernel", "kernel_base", "kernel_mangled"))

    def judge(self, launch):
        """(kernel matches, [(field, found, expected)] that differ, [fields the record lacks])."""
        if not self.kernel_matches(launch):
            return False, [], []
        differ, absent = [], []
        for field, expected in self.expect.items():
            if field not in launch or launch.get(field) is None:
                absent.append(field)
            elif launch.get(field) != expected:
                differ.append((field, launch.get(field), expected))
        return True, differ, absent

    def is_it(self, launch):
        kernel, differ, _ = self.judge(launch)
        return kernel and not differ

    def what(self):
        fields = "".join(f", {field} {show_value(value)}" for field, value in self.expect.items())
        return f"a kernel matching /{self.pattern}/{fields}"

    def why_not(self, launch):
        """Why `launch` is not the faulting launch (for messages)."""
        kernel, differ, _ = self.judge(launch)
        if not kernel:
            return f"its kernel {short((launch or {}).get('kernel') or (launch or {}).get('api'), 200)!r} " \
                   f"does not match /{self.pattern}/"
        return "the faulting kernel, but another launch of it: " + ", ".join(
            f"{field} {show_value(found)}, expected {show_value(expected)}" for field, found, expected in differ)

    def note_absent(self, outcome, launch, what):
        _, _, absent = self.judge(launch)
        if absent:
            outcome.warn(f"{what} has no {', '.join(absent)} in its record: that part of the faulting launch "
                         f"is not checked (a shim from before the field was added?)")


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
    grid = launch.get("grid")
    return (f"#{launch.get('seq')} {short(name, 400)} (kernel_base {short(launch.get('kernel_base'), 200)!r}, its "
            f"launch {launch.get('kernel_launch')}), grid {show_value(grid) if grid else grid}, thread "
            f"{launch.get('thread')} (its launch {launch.get('thread_launch', 'n/a')}), api "
            f"{launch.get('api')}/{launch.get('driver_api')}, stream {launch.get('stream')}, blocked "
            f"{launch.get('blocked')}; callsite {site_text(launch.get('callsite'))} (stack {launch.get('stack')}); "
            f"python_callsite {site_text(launch.get('python_callsite'))} ({launch.get('python_status')})")


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


def show_log(path):
    """Prints a run's log as attribution_case.sh does: three device-side assertion lines at most, and a long log
    by its first and last 150 lines (the whole log stays in the file)."""
    with open(path, errors="replace") as log:
        lines = log.read().splitlines()
    shown, asserts = [], 0
    for line in lines:
        if re.search(r"Assertion .* failed", line):
            asserts += 1
            if asserts > 3:
                continue
        shown.append(line)
    if asserts > 3:
        shown.append(f"({asserts - 3} more device-side assertion lines)")
    if len(shown) > 300:
        shown = shown[:150] + [f"... ({len(shown) - 300} lines left out: {path}) ..."] + shown[-150:]
    for line in shown:
        print(line, flush=True)


def note_configuration(outcome, starts):
    """The breadcrumbs setting the runs had (the start record's configuration), against what the mode means:
    the default run has them on since issue 38, plain is the bare shim (--breadcrumbs=0)."""
    wanted = {"default": "1", "plain": "0"}.get(outcome.mode)
    for start in starts:
        value = (start.get("configuration") or {}).get("CUDA_BLOCKRUN_BREADCRUMBS")
        print(f"report ({outcome.mode}): process {start.get('pid')}: CUDA_BLOCKRUN_BREADCRUMBS={value}", flush=True)
        if wanted is not None and value is not None and str(value) != wanted:
            how = "the wrapper with no mode flag" if outcome.mode == "default" else "--breadcrumbs=0"
            outcome.warn(f"process {start.get('pid')} ran with CUDA_BLOCKRUN_BREADCRUMBS={value}; the "
                         f"{outcome.mode} mode means {wanted} ({how})")


def check_report(args, faulting):
    outcome = Outcome(args.case, args.mode)
    source = os.path.basename(args.source)
    if args.mode == "default":
        outcome.fields = ["hint=none", "hint_runs=-"]
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
    note_configuration(outcome, starts)
    for summary in summaries:
        print(f"report ({args.mode}): summary: {summary.get('launches')} launches, "
              f"{summary.get('blocked')} blocked, first_error {summary.get('first_error')!r}, later_errors "
              f"{summary.get('later_errors')}", flush=True)
    for signal in (r for r in records if r.get("type") == "fatal_signal"):
        print(f"report ({args.mode}): fatal_signal {signal.get('signal')} handed to {signal.get('handed_to')}",
              flush=True)
    if not errors:
        outcome.fail(f"no first_error record: the shim reported no CUDA error (expected the fault in "
                     f"{faulting.what()}; program exit status {args.status})")
        return outcome.finish()
    if len(errors) > 1:
        print(f"note ({args.mode}): {len(errors)} first_error records (several processes); the earliest counts",
              flush=True)
    first = min(errors, key=lambda r: r.get("time") or 0)
    launch = first.get("launch")
    suspects = first.get("suspects") or []
    print(f"report ({args.mode}): first_error {first.get('error')} ({first.get('code')}, {first.get('layer')}): "
          f"{first.get('message')}; returned by {first.get('surfaced_api')} ({first.get('how')}); certainty "
          f"{first.get('certainty')}, method {first.get('method')}, pin_rule {first.get('pin_rule')!r}; "
          f"unfinished_launches {first.get('unfinished_launches', 'n/a')}, suspects_cut "
          f"{first.get('suspects_cut', 'n/a')}, localize_command {first.get('localize_command', 'n/a')!r}",
          flush=True)
    if first.get("driver_log"):
        print(f"report ({args.mode}): driver_log {short(json.dumps(first.get('driver_log')), 600)}", flush=True)
    print(f"report ({args.mode}): launch: {describe(launch)}", flush=True)
    for number, suspect in enumerate(suspects, 1):
        print(f"report ({args.mode}): suspect {number}: {describe(suspect)}", flush=True)

    exact = first.get("certainty") == "exact" and launch is not None
    outcome.exact = "yes" if exact else "no"
    relaxed = args.concurrent and args.mode in MODES_RELAXED_WHEN_CONCURRENT
    culprit = None
    if exact:
        if faulting.is_it(launch):
            outcome.kernel = "ok"
            culprit = launch
            print(f"OK ({args.mode}): exact, and the launch is the faulting launch", flush=True)
            faulting.note_absent(outcome, launch, "the exact launch")
        else:
            outcome.wrong(f"certainty exact (method {first.get('method')}) names {describe(launch)}, but "
                          f"{faulting.why_not(launch)} (expected {faulting.what()})")
    else:
        candidates = ([launch] if launch else []) + suspects
        culprit = next((c for c in candidates if faulting.is_it(c)), None)
        others = [c for c in candidates if faulting.kernel_matches(c) and c is not culprit]
        if others:
            print(f"note ({args.mode}): {len(others)} other launch(es) of the faulting kernel among the candidates"
                  f" (not the faulting launch: {'; '.join(faulting.why_not(c) for c in others[:3])})", flush=True)
        if culprit is not None:
            outcome.kernel = "ok"
            position = candidates.index(culprit) + 1
            print(f"OK ({args.mode}): not exact ({first.get('certainty')}); the faulting launch is candidate "
                  f"{position} of {len(candidates)}", flush=True)
            faulting.note_absent(outcome, culprit, "the faulting launch among the candidates")
        else:
            outcome.kernel = "wrong" if candidates else "none"
        if args.mode in MODES_NEEDING_THE_LAUNCH and not relaxed and not faulting.is_it(launch):
            outcome.fail(f"expected the blocked faulting launch ({faulting.what()}) as the launch, exact or not; "
                         f"found {describe(launch)}")
        if args.mode in MODES_NEEDING_EXACT and not relaxed:
            outcome.fail(f"expected certainty exact naming {faulting.what()}, found certainty "
                         f"{first.get('certainty')!r} (method {first.get('method')}) with {len(candidates)} "
                         f"candidate(s), the faulting launch {'among' if culprit else 'NOT among'} them")
        elif relaxed and culprit is None:
            outcome.fail(f"not exact ({first.get('certainty')}), and the faulting launch ({faulting.what()}) is "
                         f"neither the launch nor among the {len(suspects)} suspects (ATTRIBUTION_CONCURRENT "
                         f"allows not exact, never without it)")
        elif relaxed:
            print(f"OK ({args.mode}): not exact, the faulting launch among the candidates "
                  f"(ATTRIBUTION_CONCURRENT: several streams or threads were in flight)", flush=True)
        elif culprit is None and args.mode != "default":
            outcome.warn(f"not exact ({first.get('certainty')}), and no launch is the faulting launch "
                         f"({faulting.what()}): neither the launch nor among the {len(suspects)} suspects "
                         f"(a warning in this mode)")
        check_cut(outcome, first, suspects, culprit, faulting)
    if culprit is not None and not (args.mode == "default" and not exact):
        required = args.mode in MODES_NEEDING_THE_LINE
        what = "the Python line (launch.python_callsite)" if args.kind == "python" else \
            "the call site (launch.callsite)"
        judge_line(outcome, line_of(culprit, args.kind), args.kind, source, args.line, required, args.line_policy,
                   what)
        print(f"note ({args.mode}): the marker {source}:{args.line} among the launch's "
              f"{'Python' if args.kind == 'python' else 'native'} frames: "
              f"{marker_in_frames(culprit, args.kind, source, args.line)}", flush=True)
    if args.mode == "default" and not exact:
        # What the user gets from the first try is what the hint pins: the cell shows that, not the suspects.
        outcome.kernel, outcome.line = "none", "none"
        follow_hint(args, faulting, outcome, first)
    return outcome.finish()


def check_cut(outcome, first, suspects, culprit, faulting):
    """Issue 38: a list of suspects that lacks the faulting launch must say that it was cut (`suspects_cut`);
    and `unfinished_launches` counts at least the suspects listed."""
    if "unfinished_launches" in first and first.get("unfinished_launches") is not None:
        if first["unfinished_launches"] < len(suspects):
            outcome.warn(f"unfinished_launches {first['unfinished_launches']} is fewer than the {len(suspects)} "
                         f"suspects listed")
        elif first.get("suspects_cut") is False and first["unfinished_launches"] > len(suspects):
            outcome.warn(f"suspects_cut is false, but unfinished_launches {first['unfinished_launches']} is more "
                         f"than the {len(suspects)} suspects listed")
    if culprit is not None:
        return
    if "suspects_cut" not in first:
        print(f"note ({outcome.mode}): no suspects_cut in the record (a shim from before issue 38): whether the "
              f"list was cut is not checked", flush=True)
    elif first.get("suspects_cut") is False:
        outcome.fail(f"the faulting launch ({faulting.what()}) is not among the {len(suspects)} suspects, yet the "
                     f"report says they are every launch that could have faulted (suspects_cut false, "
                     f"unfinished_launches {first.get('unfinished_launches')})")
    else:
        print(f"OK ({outcome.mode}): the faulting launch is not among the suspects listed, and the report says "
              f"the list was cut (suspects_cut true, unfinished_launches {first.get('unfinished_launches')})",
              flush=True)


def follow_hint(args, faulting, outcome, first):
    """The default mode's first_error was not exact: its localize_command must pin the faulting launch when run
    as printed (the leading cuda-blockrun being the wrapper under test)."""
    if "localize_command" not in first:
        outcome.fail("not exact, and the first_error has no localize_command key (a shim from before issue 38): "
                     "the default run must name the culprit exactly or say how to pin it")
        return
    command = first.get("localize_command")
    if not command:
        outcome.fail(f"not exact ({first.get('certainty')}), and localize_command is {command!r}: a hint that can "
                     f"pin nothing is a defect")
        return
    try:
        words = shlex.split(command)
    except ValueError as error:
        outcome.fail(f"localize_command {command!r} is not a shell command line ({error})")
        return
    if not words or os.path.basename(words[0]) != "cuda-blockrun" or "--" not in words or \
            "--localize" not in words[1:words.index("--")]:
        outcome.fail(f"localize_command {command!r} is not `cuda-blockrun --localize ... -- PROGRAM...`")
        return
    program = words[words.index("--") + 1:]
    if args.program and program != args.program:
        outcome.warn(f"localize_command runs {shlex.join(program)!r}, not the command the case ran "
                     f"({shlex.join(args.program)!r})")
    if not args.wrapper or not args.work:
        outcome.fail("localize_command cannot be run: the checker was given no --wrapper and --work")
        return
    argv = [args.wrapper] + words[1:]
    log = os.path.join(args.work, f"{args.mode}-localize.log")
    print(f"\n== {args.case} / {args.mode}: the report's localize_command, run as printed (cuda-blockrun: the "
          f"wrapper under test): {command}\n   $ {shlex.join(argv)}", flush=True)
    with open(log, "w") as out:
        try:
            status = subprocess.run(["timeout", "-k", "10", str(args.hint_timeout)] + argv, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
        except OSError as error:
            outcome.fail(f"localize_command could not be started: {error}")
            return
    show_log(log)
    print(f"(exit status {status})", flush=True)
    outcome.fields[0] = "hint=ran"
    problem = ""
    if status in (124, 137):
        problem = f"the localize_command did not end within {args.hint_timeout} s (timeout stopped it)"
    with open(log, errors="replace") as text:
        lines = text.read().splitlines()
    reports_dir = localize_reports_dir(lines)
    failures_before = len(outcome.failures)
    runs = judge_verdict(outcome, lines, args, faulting, reports_dir, problem, status)
    outcome.fields[1] = f"hint_runs={runs}"
    keep_reports_dir(reports_dir, args.work, len(outcome.failures) > failures_before)


def localize_reports_dir(lines):
    """The directory --localize printed for its reports (`localize: run 1: ... (reports in DIR)`), or None."""
    for line in lines:
        match = re.search(r"localize: run 1: .*\(reports in (.*/cuda-blockrun-localize\.[^/)]*)\)$", line)
        if match:
            return match.group(1)
    return None


def keep_reports_dir(reports_dir, work, failed):
    """Moves --localize's reports beside the logs when a check failed (they are kept with them), else removes
    them."""
    if not reports_dir or not os.path.isdir(reports_dir):
        return
    if failed and work and os.path.isdir(work):
        target = os.path.join(work, "hint-" + os.path.basename(reports_dir))
        shutil.move(reports_dir, target)
        print(f"(the localize_command's reports moved to {target})", flush=True)
    else:
        shutil.rmtree(reports_dir, ignore_errors=True)


VERDICT = "] localize: culprit: "
CONTINUATION = "[cuda-blockrun]   "


def culprit_name(text):
    """NAME of a launch as the log describes it, `kernel NAME<<<GRID, BLOCK, SHARED, STREAM>>>, launch #N
    (BASE#K)` or `graph launch NAME, launch #N, stream S` (the regex is matched against NAME: it may be anchored);
    the whole text where it is neither."""
    named = re.match(r"^(?:kernel|graph launch) (.*?)(?:<<<.*>>>)?(?:, launched by .*)?, launch #\d+", text)
    return named.group(1) if named else text


def verdict_fields(culprit):
    """The launch record's fields the verdict's first line shows: grid and block from `<<<(..), (..), ...>>>`,
    and kernel_launch (or thread_launch) from its closing `(NAME#N)` (`(NAME thread#N)`)."""
    fields = {}
    config = re.search(r"<<<\((\d+),(\d+),(\d+)\), \((\d+),(\d+),(\d+)\)", culprit)
    if config:
        numbers = [int(n) for n in config.groups()]
        fields["grid"], fields["block"] = numbers[:3], numbers[3:]
    ordinal = re.search(r"\(([^()]*)\)\s*$", culprit)
    if ordinal:
        thread = re.search(r"\bthread#(\d+)$", ordinal.group(1))
        kernel = re.search(r"#(\d+)$", ordinal.group(1))
        if thread:
            fields["thread_launch"] = int(thread.group(1))
        elif kernel:
            fields["kernel_launch"] = int(kernel.group(1))
    return fields


def count_runs(lines, reports_dir):
    """How many runs --localize made: the runN.* report files it left, else what its log says."""
    if reports_dir and os.path.isdir(reports_dir):
        numbers = {int(m.group(1)) for m in (re.match(r"run(\d+)\.", name) for name in os.listdir(reports_dir))
                   if m}
        if numbers:
            return str(max(numbers))
    said = [l for l in lines if l.startswith("[cuda-blockrun] localize:")]
    if any("No second run needed" in l for l in lines):
        return "1"
    if any(re.search(r"\brun 3\b", l) for l in said):
        return "3"
    if any(re.search(r"\brun 2\b", l) for l in said):
        return "2"
    return "?"


def check_run_reports(outcome, reports_dir, faulting):
    """Every exact first_error in --localize's runs must be the faulting launch. Returns the fields of the
    exact ones that are (to check what the verdict does not show)."""
    confirmed = []
    if not reports_dir or not os.path.isdir(reports_dir):
        return confirmed
    for name in sorted(os.listdir(reports_dir)):
        path = os.path.join(reports_dir, name)
        try:
            with open(path, errors="replace") as report:
                records = [json.loads(t) for t in report if t.strip().startswith("{")]
        except (OSError, ValueError):
            records = []
        for first in (r for r in records if r.get("type") == "first_error"):
            launch = first.get("launch")
            print(f"localize report {name}: {first.get('error')} by {first.get('surfaced_api')}, certainty "
                  f"{first.get('certainty')}, method {first.get('method')}, pin_rule {first.get('pin_rule')!r}; "
                  f"launch {describe(launch)}", flush=True)
            if first.get("certainty") != "exact" or launch is None:
                continue
            if faulting.is_it(launch):
                confirmed.append(launch)
            else:
                outcome.wrong(f"{name}: certainty exact names {describe(launch)}, but {faulting.why_not(launch)}")
    return confirmed


def judge_verdict(outcome, lines, args, faulting, reports_dir, problem, status):
    """The checks of --localize's output (`lines`), into `outcome`; returns how many runs it made."""
    source = os.path.basename(args.source)
    if problem:
        outcome.fail(problem)
    said = [l for l in lines if l.startswith("[cuda-blockrun] localize:")]
    for line in said:
        print(f"localize said: {short(line, 600)}", flush=True)
    runs = count_runs(lines, reports_dir)
    start = next((i for i, l in enumerate(lines) if VERDICT in l), None)
    verdict = []
    if start is not None:
        verdict = [lines[start].split(VERDICT, 1)[1]]
        for line in lines[start + 1:]:
            if not line.startswith(CONTINUATION):
                break
            verdict.append(line[len(CONTINUATION):].strip())
    print(f"localize ({args.case}, {outcome.mode}): {runs} run(s); program exit status {status}", flush=True)
    confirmed = check_run_reports(outcome, reports_dir, faulting)
    if not verdict:
        if any("no CUDA error in run 1" in l for l in said):
            outcome.fail(f"localize found no CUDA error in run 1 (expected the fault in {faulting.what()})")
        else:
            candidates = [l[len("[cuda-blockrun]     "):] for l in lines if l.startswith("[cuda-blockrun]     ")]
            among = any(faulting.regex.search(culprit_name(l)) for l in candidates)
            if outcome.kernel != "wrong":
                outcome.kernel = "ok" if among else "wrong" if candidates else "none"
            outcome.fail(f"no verdict line '[cuda-blockrun] localize: culprit: ...' (expected one naming "
                         f"{faulting.what()}); {len(candidates)} candidate line(s), the faulting kernel "
                         f"{'among' if among else 'not among'} them")
        return runs
    for line in verdict:
        print(f"verdict: {short(line, 600)}", flush=True)
    if outcome.mode == "localize":
        outcome.exact = "yes"
    culprit = verdict[0]
    shown = verdict_fields(culprit)
    differ = [(field, shown[field], expected) for field, expected in faulting.expect.items()
              if field in shown and shown[field] != expected]
    if not faulting.regex.search(culprit_name(culprit)):
        outcome.wrong(f"the verdict names {short(culprit, 300)!r}, expected {faulting.what()}")
    elif differ:
        outcome.wrong(f"the verdict names {short(culprit, 300)!r}: the faulting kernel, but another launch of it: "
                      + ", ".join(f"{field} {show_value(found)}, expected {show_value(expected)}"
                                  for field, found, expected in differ))
    else:
        if outcome.kernel != "wrong":
            outcome.kernel = "ok"
        print("OK (%s): the verdict's culprit is the faulting kernel%s" % (
            outcome.mode, "".join(f", {field} {show_value(shown[field])}" for field in faulting.expect
                                  if field in shown)), flush=True)
        unshown = [field for field in faulting.expect if field not in shown]
        if unshown:
            if confirmed:
                print(f"OK ({outcome.mode}): {', '.join(unshown)} (not in the verdict's line) checked in the "
                      f"runs' reports: {len(confirmed)} exact first_error(s), each the faulting launch", flush=True)
                for launch in confirmed:
                    faulting.note_absent(outcome, launch, "the runs' exact launch")
            else:
                outcome.warn(f"{', '.join(unshown)}: neither in the verdict's line nor in an exact first_error of "
                             f"the runs' reports: not checked")
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
    return runs


def check_localize(args, faulting):
    outcome = Outcome(args.case, args.mode)
    with open(args.log, errors="replace") as log:
        lines = log.read().splitlines()
    runs = judge_verdict(outcome, lines, args, faulting, args.reports_dir, args.run_problem, args.status)
    verdict = any(VERDICT in l for l in lines)
    outcome.extra.append(f"LOCALIZE {args.case} runs={runs} verdict={'culprit' if verdict else 'none'}")
    return outcome.finish()


def main():
    argv = sys.argv[1:]
    program = []
    if "--" in argv:
        program = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("report", "localize"))
    parser.add_argument("--case", required=True)
    parser.add_argument("--mode", default="localize")
    parser.add_argument("--report")
    parser.add_argument("--log")
    parser.add_argument("--reports-dir")
    parser.add_argument("--regex", required=True)
    parser.add_argument("--expect", action="append", type=parse_expect, default=[],
                        help="FIELD=VALUE the faulting launch's record has (repeatable)")
    parser.add_argument("--concurrent", action="store_true",
                        help="several streams or threads in flight: breadcrumbs, block-kernel and block-all may "
                             "name the faulting launch among the suspects")
    parser.add_argument("--kind", choices=("native", "python"), required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--line", type=int, required=True)
    parser.add_argument("--line-policy", choices=("fail", "warn"), default="fail")
    parser.add_argument("--status", default="?")
    parser.add_argument("--run-problem", default="", help="what went wrong with the run itself (a failure)")
    parser.add_argument("--wrapper", help="default mode: the wrapper that runs the report's localize_command")
    parser.add_argument("--work", help="default mode: where the localize_command's log is written")
    parser.add_argument("--hint-timeout", type=int, default=450, help="default mode: seconds for localize_command")
    args = parser.parse_args(argv)
    args.program = program
    faulting = Faulting(args.regex, args.expect)
    if args.what == "report":
        if not args.report:
            parser.error("report needs --report")
        return check_report(args, faulting)
    if not args.log:
        parser.error("localize needs --log")
    return check_localize(args, faulting)


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: MIT

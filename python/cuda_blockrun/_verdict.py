# SPDX-License-Identifier: MIT
"""The traceback's note: the shim's first_error record (docs/report.md) as the lines a user reads after the
traceback of a CUDA error. Values in, text out: no I/O here."""

# The exceptions that carry a CUDA error, by class name (the classes live in packages this one never imports):
# PyTorch's torch.AcceleratorError (2.8+), CuPy's runtime and driver errors, cuda-python's.
CUDA_ERROR_CLASSES = ("AcceleratorError", "CUDARuntimeError", "CUDADriverError", "CudaAPIError")
# Older PyTorch raises RuntimeError("CUDA error: ..."); Triton "Triton Error [CUDA]: ...".
CUDA_ERROR_TEXTS = ("CUDA error", "cudaError", "CUDA_ERROR_", "Triton Error [CUDA]")

PREFIX = "[cuda-blockrun] "


def is_cuda_error(exception):
    """Whether `exception`, or one it was raised from or during, reports a CUDA error."""
    seen = set()
    while exception is not None and id(exception) not in seen:
        seen.add(id(exception))
        if type(exception).__name__ in CUDA_ERROR_CLASSES:
            return True
        text = str(exception)
        if any(marker in text for marker in CUDA_ERROR_TEXTS):
            return True
        exception = exception.__cause__ or exception.__context__
    return False


def _python_line(launch):
    site = launch.get("python_callsite") or {}
    if not site:
        return None
    function = site.get("function")
    return "%s:%s%s" % (site.get("file"), site.get("line"), " in %s" % function if function else "")


def _native_line(launch):
    # The program's own frame where one was found, else the innermost frame that has a source line; else, as the
    # log writes it, the call site's function and its place in its module (a library without line tables).
    frames = [launch.get("callsite")] + list(launch.get("frames") or [])
    for frame in frames:
        if frame and frame.get("file") and frame.get("line"):
            function = frame.get("function")
            return "%s:%s%s" % (frame["file"], frame["line"], " in %s" % function if function else "")
    for frame in frames:
        if frame and frame.get("function") and frame.get("module"):
            return "%s (%s+%s)" % (frame["function"], frame["module"].rsplit("/", 1)[-1], frame.get("offset"))
    return None


def _localize_command(command):
    """The shim's `cuda-blockrun --localize -- PYTHON -m cuda_blockrun._run ARGS` (a run through python -m
    cuda_blockrun) as the user would type it: `PYTHON -m cuda_blockrun --localize ARGS`."""
    runner = " -m cuda_blockrun._run "
    head = "cuda-blockrun --localize -- "
    if command.startswith(head) and runner in command:
        python, arguments = command[len(head):].split(runner, 1)
        return "%s -m cuda_blockrun --localize %s" % (python, arguments)
    return command


def _launch_name(launch):
    if not launch:
        return "unknown"
    library = launch.get("library_call")
    name = launch.get("kernel") or (library or {}).get("api") or "(unnamed kernel)"
    text = "%s, launch #%s" % (name, launch.get("seq"))
    if launch.get("kernel_base") and launch.get("kernel_launch"):
        text += " (%s#%s)" % (launch["kernel_base"], launch["kernel_launch"])
    return text


def note_lines(record, in_notebook=False):
    """The note for a first_error record (a dict), or for None (the shim saw no CUDA error)."""
    if record is None:
        return [
            PREFIX + "this exception reports a CUDA error, but the shim saw none: it came from a call the shim "
            "does not watch, or before the shim was enabled (cuda_blockrun.status())"
        ]
    lines = [
        PREFIX
        + "first CUDA error: %s (%s), surfaced at %s"
        % (record.get("error"), record.get("message"), record.get("surfaced_api"))
    ]
    launch = record.get("launch")
    exact = record.get("certainty") == "exact" and launch is not None
    if exact:
        lines.append(PREFIX + "culprit (exact, by %s): %s" % (record.get("method"), _launch_name(launch)))
    elif launch is not None:
        lines.append(PREFIX + "culprit not proved; most likely: %s" % _launch_name(launch))
    else:
        lines.append(PREFIX + "culprit unknown")
    if launch is not None:
        python = _python_line(launch)
        native = _native_line(launch)
        lines.append(PREFIX + "  Python: %s" % (python or "no Python line (launched outside Python code)"))
        lines.append(PREFIX + "  C++:    %s" % (native or "no source line (run again with --block to walk its stack)"))
    suspects = [s for s in (record.get("suspects") or []) if s]
    if not exact and suspects:
        lines.append(PREFIX + "  other suspects:")
        for suspect in suspects:
            python = _python_line(suspect)
            lines.append(PREFIX + "    %s%s" % (_launch_name(suspect), " at " + python if python else ""))
    if not exact:
        lines.extend(_pin_hint(record, in_notebook))
    return lines


def _pin_hint(record, in_notebook):
    rule = record.get("pin_rule") if record.get("pin_rule_covers") else None
    block = rule or "all"
    if in_notebook:
        # The kernel cannot be run again under --localize: the same process, restarted, with the rule set.
        return [
            PREFIX + "to pin it: restart the kernel and run first "
            "`import cuda_blockrun; cuda_blockrun.enable(block=%r)`, then the cells again" % block
        ]
    lines = []
    if record.get("localize_command"):
        lines.append(PREFIX + "to pin it: " + _localize_command(record["localize_command"]))
        lines.append(PREFIX + "or run again with cuda_blockrun.enable(block=%r) (--block %r)" % (block, block))
    else:
        lines.append(PREFIX + "to pin it: run again with cuda_blockrun.enable(block=%r) (--block %r)" % (block, block))
    return lines

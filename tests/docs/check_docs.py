#!/usr/bin/env python3
"""Checks that the flags, variables, policies and examples of README.md and docs/*.md run as written (issue 19).

What it checks, in each markdown file, in code blocks and inline code:
  flags       every --flag on a `cuda-blockrun ...` command line (between cuda-blockrun and its `--` or program,
              and after `cuda-blockrun report`) is one the built wrapper lists (`--help`, and `--help-all`
              where the wrapper has it);
  variables   every CUDA_BLOCKRUN_* name, anywhere in the file, is a variable of `cuda-blockrun
              --help-config-markdown` or a CMake cache variable of the source tree (-DCUDA_BLOCKRUN_FUZZ=OFF);
              a name written with a wildcard (CUDA_BLOCKRUN_*) is not checked;
  policies    every `--block VALUE` and `CUDA_BLOCKRUN_BLOCK=VALUE` parses (`cuda-blockrun --block VALUE --explain
              k` exits 0);
  values      the options of every `cuda-blockrun ...` line are accepted together: `cuda-blockrun OPTIONS
              --explain k` (or the line's own --explain LAUNCH) exits 0, which checks every value, runs nothing;
              values with a placeholder (`...`, `<kernels>`, `NAME`, `FILE`) are not checked;
  examples    marked code blocks run on the simulated CUDA stack and print what they show.

How to mark a runnable example: put the comment line `<!-- example: sim -->` (optionally with environment
settings, e.g. `<!-- example: sim CUDA_SIM_FAULT=stencil:13 -->`) on the line just before a fenced code block
whose lines are `$ command` lines, each followed by (some of) the lines it prints:

    <!-- example: sim CUDA_SIM_FAULT=stencil:13 -->
    ```
    $ cuda-blockrun --block all -- demo-stencil
    [cuda-blockrun] first error: cudaErrorIllegalAddress (...), returned by cudaStreamSynchronize (...)
    ...
    ```

The commands run in order, with bash, in one scratch directory (a later command can read what an earlier one
wrote), with `cuda-blockrun` and the demo program `demo-stencil` on PATH (also as ./demo-stencil and
build/bin/demo-stencil), LD_LIBRARY_PATH at the simulated stack, and the comment's settings. Every shown line
must be a whole line of the command's output (standard output and error together), in the order shown, other
lines may come between; `...` in a shown line matches any text (write paths, pids and times as `...`), and a
shown line that is only `...` stands for lines left out. The exit status is not checked.

Each finding is printed as `FILE:LINE: what is wrong`; the exit status is 1 when there is one.
--expect FILE checks the checker itself: each line of FILE, `NAME:LINE: text`, must be a finding (at that file
name and line, containing the text), and there must be no other finding (tests/docs/fixtures/).
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

EXAMPLE_MARK = re.compile(r"^\s*<!--\s*example:\s*sim\b(.*?)-->\s*$")
FENCE = re.compile(r"^\s*(```+|~~~+)")
VARIABLE = re.compile(r"CUDA_BLOCKRUN_[A-Z0-9_]*[A-Z0-9]")
WRAPPER_WORD = re.compile(r"(?:^|(?<=[\s(/]))cuda-blockrun(?=\s|$)")
# A flag, an optional `[=...]`, and its value's name: a placeholder (`N`, `FILE`) or its accepted values
# (`auto|all|none`, `1|2|4`).
HELP_FLAG = re.compile(r"^\s*(--[a-z][a-z0-9-]*)(\[?=[^\s]*)?"
                       r"(?:\s+([A-Z][A-Z0-9_]*|[a-z0-9]+(?:\|[a-z0-9]+)+)(?=\s|$))?")
INFORMATIONAL_FLAGS = {"--help", "--help-all", "--version", "--list-hooks", "--help-config-markdown"}
SHELL_STOPS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>&1"}
COMMAND_TIMEOUT_S = 30


class Findings:
    def __init__(self):
        self.items = []

    def add(self, path, line, text):
        self.items.append((path, line, text))


def shell_words(text):
    """Yields (word, is_quoted) of a shell command line one at a time, stopping at a comment or at what cannot
    be read (an unbalanced quote): the caller stops reading where it needs to, so prose after a command does
    not matter."""
    index, length = 0, len(text)
    while index < length:
        while index < length and text[index].isspace():
            index += 1
        if index >= length or text[index] == "#":
            return
        word, quoted = [], False
        while index < length and not text[index].isspace():
            char = text[index]
            if char in "'\"":
                end = text.find(char, index + 1)
                if end < 0:
                    return
                word.append(text[index + 1:end])
                quoted = True
                index = end + 1
            elif char == "\\" and index + 1 < length:
                word.append(text[index + 1])
                index += 2
            else:
                word.append(char)
                index += 1
        yield "".join(word), quoted


def is_placeholder(value):
    return "..." in value or "<" in value or re.fullmatch(r"[A-Z][A-Z_]*", value) is not None  # NAME, FILE


class Wrapper:
    """What the built wrapper accepts, asked of the wrapper itself."""

    def __init__(self, path, source_root):
        self.path = path
        self.flags = {}  # flag -> True when it takes a value
        self.report_flags = set()
        help_text = self.run(["--help"]).stdout
        help_all = self.run(["--help-all"])
        if help_all.returncode == 0:
            help_text += help_all.stdout
        for line in help_text.splitlines():
            match = HELP_FLAG.match(line)
            if match:
                flag, suffix, metavar = match.groups()
                takes_value = bool(metavar) and not (suffix or "").startswith("[")
                self.flags[flag] = self.flags.get(flag, False) or takes_value
            # usage: cuda-blockrun report [--json] [--trace OUT.json] FILE...|DIR
            if re.search(r"cuda-blockrun report\s+\[", line):
                self.report_flags.update(re.findall(r"--[a-z][a-z0-9-]*", line.split("report", 1)[1]))
        # The informational flags the checker itself uses.
        for flag in ("--help", "--help-config-markdown"):
            self.flags.setdefault(flag, False)
        markdown = self.run(["--help-config-markdown"])
        self.variables = set(re.findall(r"^\|\s*`(CUDA_BLOCKRUN[A-Z0-9_]*)`", markdown.stdout, re.M))
        if not self.flags or not self.variables:
            sys.exit(f"check_docs: {path} --help / --help-config-markdown gave no flags or variables")
        self.variables |= cmake_cache_variables(source_root)

    def run(self, arguments, cwd=None):
        return subprocess.run([self.path] + arguments, capture_output=True, text=True, cwd=cwd,
                              timeout=COMMAND_TIMEOUT_S)


def edit_distance(first, second):
    """Edits from one to the other: insertions, deletions, substitutions and swaps of neighbours."""
    table = [[i + j if i * j == 0 else 0 for j in range(len(second) + 1)] for i in range(len(first) + 1)]
    for i in range(1, len(first) + 1):
        for j in range(1, len(second) + 1):
            cost = first[i - 1] != second[j - 1]
            table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and first[i - 1] == second[j - 2] and first[i - 2] == second[j - 1]:
                table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
    return table[-1][-1]


def cmake_cache_variables(source_root):
    """CUDA_BLOCKRUN_* names the build declares (option() and set(... CACHE ...)): docs may name them after -D."""
    names = set()
    for path in glob.glob(os.path.join(source_root, "**", "CMakeLists.txt"), recursive=True):
        with open(path, encoding="utf-8", errors="replace") as stream:
            text = stream.read()
        names.update(re.findall(r"\boption\(\s*(CUDA_BLOCKRUN_[A-Z0-9_]+)", text))
        names.update(re.findall(r"\bset\(\s*(CUDA_BLOCKRUN_[A-Z0-9_]+)\s[^)]*\bCACHE\b", text))
    return names


def code_pieces(lines):
    """Yields (line_number, text, in_block) for every line of a fenced code block and every inline code span
    of the prose (a span may cross lines of a paragraph; it is given at the line where it starts)."""
    in_block = False
    paragraph = []  # (line_number, text)

    def spans():
        text = "\n".join(line for _, line in paragraph)
        starts = []
        offset = 0
        for number, line in paragraph:
            starts.append((offset, number))
            offset += len(line) + 1
        for match in re.finditer(r"(`+)(.+?)\1", text, re.S):
            number = [n for start, n in starts if start <= match.start()][-1]
            yield number, match.group(2).replace("\n", " ").strip(), False

    for number, line in enumerate(lines, 1):
        if FENCE.match(line):
            if not in_block:
                yield from spans()
                paragraph = []
            in_block = not in_block
            continue
        if in_block:
            yield number, line, True
        elif line.strip():
            paragraph.append((number, line))
        else:
            yield from spans()
            paragraph = []
    yield from spans()


def joined_block_lines(pieces):
    """Joins code block lines that end with a backslash with the lines that continue them."""
    pending = None
    for number, text, in_block in pieces:
        if pending:
            pending = (pending[0], pending[1][:-1] + " " + text.strip(), True)
        else:
            pending = (number, text, in_block)
        if in_block and pending[1].rstrip().endswith("\\"):
            pending = (pending[0], pending[1].rstrip(), True)
            continue
        yield pending
        pending = None
    if pending:
        yield pending


class Checker:
    def __init__(self, wrapper, findings, scratch):
        self.wrapper = wrapper
        self.findings = findings
        self.scratch = scratch
        self.policies_checked = {}
        self.counts = {"command lines": 0, "flags": 0, "variables": 0, "policies": 0, "option lines": 0,
                       "examples": 0}

    def check_file(self, path, shown_path):
        with open(path, encoding="utf-8") as stream:
            lines = stream.read().splitlines()
        for number, line in enumerate(lines, 1):
            self.check_variables(shown_path, number, line)
        # A marked example's own output is what is checked of it: it may show a policy that is refused.
        example_lines = set()
        for number, line in enumerate(lines, 1):
            if EXAMPLE_MARK.match(line) and number < len(lines) and FENCE.match(lines[number]):
                end = next((i for i in range(number + 1, len(lines)) if FENCE.match(lines[i])), len(lines))
                example_lines.update(range(number + 2, end + 1))
        for number, text, in_block in joined_block_lines(code_pieces(lines)):
            text = re.sub(r"^\s*\$\s+", "", text)
            for match in WRAPPER_WORD.finditer(text):
                self.check_command_line(shown_path, number, text[match.end():], number in example_lines)
            if number in example_lines:
                continue
            self.check_environment_policy(shown_path, number, text)
            if not in_block and not WRAPPER_WORD.search(text):
                self.check_lone_flag(shown_path, number, text)
            # A policy example written without the wrapper (docs/policy.md's list: `--block 'stencil#13 abort'`).
            if text.lstrip().startswith("--block") and not WRAPPER_WORD.search(text):
                words = list(shell_words(text))
                self.take_block_values(shown_path, number, [word for word, _ in words])
        self.check_examples(path, shown_path, lines)

    def check_variables(self, path, number, line):
        for match in VARIABLE.finditer(line):
            after = line[match.end():match.end() + 1]
            if after in ("*", "_"):
                continue
            self.counts["variables"] += 1
            if match.group(0) in self.wrapper.variables:
                continue
            self.findings.add(path, number, f"unknown variable {match.group(0)} (not in cuda-blockrun "
                                            "--help-config-markdown)")

    def check_lone_flag(self, path, number, text):
        """Inline code that starts with a flag but names no command (`--breadcrumbs`): other tools' flags are
        written so too (`--default-stream per-thread`, srun's `--export`), so only one a single edit away from a
        wrapper flag (a letter missing, added, changed or two swapped) is taken for a misspelling of it."""
        match = re.match(r"(--[a-z][a-z0-9-]*)", text)
        if not match:
            return
        flag = match.group(1)
        if flag in self.wrapper.flags or flag in self.wrapper.report_flags:
            return
        close = [known for known in self.wrapper.flags if len(flag) > 5 and edit_distance(flag, known) <= 1]
        if close:
            self.findings.add(path, number, f"cuda-blockrun has no flag {flag} (did you mean {close[0]}?)")

    def check_environment_policy(self, path, number, text):
        """CUDA_BLOCKRUN_BLOCK=VALUE where it is an assignment of a command (first words of the line)."""
        for word, _ in shell_words(text):
            if word in ("export", "env", "$"):
                continue
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):
                break
            name, value = word.split("=", 1)
            if name == "CUDA_BLOCKRUN_BLOCK" and not is_placeholder(value) and value:
                self.check_policy(path, number, value)

    def take_block_values(self, path, number, words):
        for index, word in enumerate(words):
            if word == "--block" and index + 1 < len(words):
                value = words[index + 1]
            elif word.startswith("--block="):
                value = word[len("--block="):]
            else:
                continue
            if not is_placeholder(value):
                self.check_policy(path, number, value)

    def check_command_line(self, path, number, rest, in_example=False):
        words = [word for word, quoted in shell_words(rest)]
        self.counts["command lines"] += 1
        if words and words[0] == "report":
            for word in words[1:]:
                if word in SHELL_STOPS:
                    break
                if word.startswith("--") and word not in self.wrapper.report_flags:
                    self.findings.add(path, number, f"cuda-blockrun report does not accept {word} (its usage "
                                                    f"lists {', '.join(sorted(self.wrapper.report_flags))})")
            return
        options, index = [], 0
        while index < len(words):
            word = words[index]
            optional = re.fullmatch(r"\[(--[^\]]+)\]", word)  # `[--breadcrumbs]`: an optional flag
            if optional:
                word = optional.group(1)
            if word == "--" or word in SHELL_STOPS or not word.startswith("-"):
                break
            flag = word.split("=", 1)[0]
            self.counts["flags"] += 1
            if flag not in self.wrapper.flags:
                self.findings.add(path, number, f"cuda-blockrun has no flag {flag} (not listed by "
                                                "cuda-blockrun --help or --help-all)")
                options.append(word)
                index += 1
                continue
            options.append(word)
            if self.wrapper.flags[flag] and "=" not in word and index + 1 < len(words):
                options.append(words[index + 1])
                index += 1
            index += 1
        if in_example:
            return
        self.take_block_values(path, number, options)
        self.check_options(path, number, options)

    def check_options(self, path, number, options):
        """The line's options, as written, are accepted: they run with `--explain somekernel` added (their own
        --explain where they have one), which checks every value and runs nothing. An option whose value is a
        placeholder (`--block NAME`, `--log FILE`) is left out."""
        runnable, explain = [], None
        index = 0
        while index < len(options):
            word = options[index]
            flag = word.split("=", 1)[0]
            if flag not in self.wrapper.flags or flag in INFORMATIONAL_FLAGS:
                return  # an unknown flag is reported already; --help and the like print and exit
            taken = [word]
            if self.wrapper.flags[flag] and "=" not in word and index + 1 < len(options):
                taken.append(options[index + 1])
            index += len(taken)
            value = taken[1] if len(taken) > 1 else word.split("=", 1)[1] if "=" in word else ""
            if flag == "--block" and self.policies_checked.get(value):
                return  # its policy is reported already
            if is_placeholder(value):
                if flag == "--explain":
                    return
                continue
            if flag == "--explain":
                explain = taken
            else:
                runnable += taken
        if not runnable and not explain:
            return
        runnable += explain or ["--explain", "somekernel"]
        self.counts["option lines"] += 1
        result = self.wrapper.run(runnable, cwd=self.scratch)
        if result.returncode != 0:
            message = (result.stderr.strip().splitlines() or ["no message"])[0]
            self.findings.add(path, number, f"`cuda-blockrun {' '.join(runnable)}` exits {result.returncode}: "
                                            f"{message}")

    def check_policy(self, path, number, value):
        self.counts["policies"] += 1
        if value not in self.policies_checked:
            result = self.wrapper.run(["--block", value, "--explain", "somekernel"], cwd=self.scratch)
            message = (result.stderr.strip().splitlines() or ["no message"])[0]
            self.policies_checked[value] = None if result.returncode == 0 else (result.returncode, message)
        failure = self.policies_checked[value]
        if failure:
            self.findings.add(path, number, f"policy '{value}' does not parse (exit {failure[0]}): {failure[1]}")

    def check_examples(self, path, shown_path, lines):
        for number, line in enumerate(lines, 1):
            mark = EXAMPLE_MARK.match(line)
            if not mark:
                continue
            if number >= len(lines) or not FENCE.match(lines[number]):
                self.findings.add(shown_path, number, "example mark not followed by a fenced code block")
                continue
            environment = {}
            for word, _ in shell_words(mark.group(1)):
                if "=" not in word:
                    self.findings.add(shown_path, number, f"example mark: '{word}' is not NAME=VALUE")
                    continue
                name, value = word.split("=", 1)
                environment[name] = value
            block = []
            for offset in range(number + 1, len(lines)):
                if FENCE.match(lines[offset]):
                    break
                block.append((offset + 1, lines[offset]))
            self.counts["examples"] += 1
            self.run_example(shown_path, number, environment, block)

    def run_example(self, path, mark_line, environment, block):
        commands = []  # (line, command, [(line, shown)])
        for number, text in block:
            if text.startswith("$ "):
                commands.append((number, text[2:], []))
            elif commands:
                commands[-1][2].append((number, text))
            elif text.strip():
                self.findings.add(path, number, "example: output shown before any `$ command` line")
        if not commands:
            self.findings.add(path, mark_line, "example: the block has no `$ command` line")
            return
        if not os.path.exists(os.path.join(self.wrapper.build, "bin", "demo-stencil")) and any(
                "demo-stencil" in command for _, command, _ in commands):
            print(f"check_docs: {path}:{mark_line}: example skipped: the demo was not built (no nvcc)",
                  file=sys.stderr)
            return
        directory = tempfile.mkdtemp(prefix="example.", dir=self.scratch)
        build = self.wrapper.build
        demo = os.path.join(build, "bin", "demo-stencil")
        os.symlink(build, os.path.join(directory, "build"))
        if os.path.exists(demo):
            os.symlink(demo, os.path.join(directory, "demo-stencil"))
        env = dict(os.environ)
        for name in [name for name in env if name.startswith("CUDA_BLOCKRUN") or name.startswith("CUDA_SIM")]:
            del env[name]
        env["PATH"] = os.path.join(build, "bin") + os.pathsep + env.get("PATH", "")
        env["LD_LIBRARY_PATH"] = os.path.join(build, "sim", "lib")
        env.update(environment)
        for number, command, shown in commands:
            try:
                result = subprocess.run(["bash", "-c", command], cwd=directory, env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, timeout=COMMAND_TIMEOUT_S)
                output = result.stdout.splitlines()
            except subprocess.TimeoutExpired:
                self.findings.add(path, number, f"example: `{command}` ran past {COMMAND_TIMEOUT_S} s")
                continue
            position = 0
            for shown_number, text in shown:
                if text.strip() in ("", "..."):
                    continue
                pattern = re.compile(".*".join(re.escape(part) for part in re.split(r"\.{3,}", text.rstrip())))
                found = next((i for i in range(position, len(output)) if pattern.fullmatch(output[i].rstrip())),
                             None)
                if found is None:
                    earlier = any(pattern.fullmatch(line.rstrip()) for line in output[:position])
                    where = "earlier than the line before it" if earlier else "not in its output"
                    self.findings.add(path, shown_number, f"example: `{command}` printed no line '{text.strip()}'"
                                                          f" ({where}; exit status {result.returncode})")
                    break
                position = found + 1


def check_expected(findings, expect_path):
    """The self-test: the findings are exactly the expected ones (by file name, line and a piece of text)."""
    with open(expect_path, encoding="utf-8") as stream:
        expected = [line.rstrip("\n") for line in stream if line.strip() and not line.startswith("#")]
    remaining = list(findings.items)
    failures = []
    for line in expected:
        name, number, text = line.split(":", 2)
        text = text.strip()
        match = next((item for item in remaining if os.path.basename(item[0]) == name and item[1] == int(number)
                      and text in item[2]), None)
        if match:
            remaining.remove(match)
        else:
            failures.append(f"{expect_path}: expected finding not reported: {line}")
    for path, number, text in remaining:
        failures.append(f"{path}:{number}: unexpected finding: {text}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wrapper", required=True, help="the built cuda-blockrun")
    parser.add_argument("--build", required=True, help="the build tree (bin/demo-stencil, sim/lib)")
    parser.add_argument("--source", required=True, help="the source tree (README.md, docs/, CMakeLists.txt)")
    parser.add_argument("--expect", help="check the checker: these findings, and no others, must be reported")
    parser.add_argument("files", nargs="*", help="markdown files (default: README.md and docs/*.md)")
    arguments = parser.parse_args()

    source = os.path.abspath(arguments.source)
    files = arguments.files or [os.path.join(source, "README.md")] + sorted(
        glob.glob(os.path.join(source, "docs", "*.md")))
    wrapper = Wrapper(os.path.abspath(arguments.wrapper), source)
    wrapper.build = os.path.abspath(arguments.build)
    findings = Findings()
    scratch = tempfile.mkdtemp(prefix="check_docs.")
    try:
        checker = Checker(wrapper, findings, scratch)
        for path in files:
            shown = os.path.relpath(path, source) if os.path.abspath(path).startswith(source + os.sep) else path
            checker.check_file(path, shown)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("check_docs: checked " + ", ".join(f"{count} {what}" for what, count in checker.counts.items()) +
          f" in {len(files)} files", file=sys.stderr)

    if arguments.expect:
        failures = check_expected(findings, arguments.expect)
        for failure in failures:
            print(failure)
        print(f"check_docs self-test: {len(findings.items)} findings, {len(failures)} failures")
        return 1 if failures else 0
    for path, number, text in sorted(findings.items, key=lambda item: (item[0], item[1])):
        print(f"{path}:{number}: {text}")
    return 1 if findings.items else 0


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: MIT

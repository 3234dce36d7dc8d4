#!/usr/bin/env python3
"""Validates a cuda-blockrun report (JSON lines) against docs/report.schema.json.

Usage: validate_report.py SCHEMA REPORT [--expect TYPE ...]

Every line must be one JSON object whose "type" names a record of the schema ("records" in it), and must
validate against that record's JSON Schema (draft 2020-12, with python3-jsonschema: Debian's package, which
tools/dev installs); each --expect TYPE must occur at least once. A line that is not UTF-8 or not JSON is a
problem like any other. Prints what is wrong and exits 1, or prints a count.
"""
import json
import sys

import jsonschema


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__)
        return 2
    schema_path, report_path = args[0], args[1]
    expected = [args[i + 1] for i, arg in enumerate(args) if arg == "--expect"]
    with open(schema_path, encoding="utf-8") as f:
        root = json.load(f)
    jsonschema.Draft202012Validator.check_schema(root)
    # One validator per record type: the root with a reference to that record, so that the records'
    # "$ref": "#/$defs/..." resolve against the root.
    validators = {
        kind: jsonschema.Draft202012Validator(dict(root, **{"$ref": f"#/records/{kind}"}))
        for kind in root["records"]
    }
    problems, seen = [], {}
    with open(report_path, "rb") as f:
        lines = f.read().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for number, raw in enumerate(lines, 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            problems.append(f"line {number}: not UTF-8 ({error}): {raw[:200]!r}")
            continue
        try:
            record = json.loads(line)
        except ValueError as error:
            problems.append(f"line {number}: not JSON ({error}): {line[:200]}")
            continue
        if not isinstance(record, dict) or record.get("type") not in validators:
            problems.append(f"line {number}: not a known record: {line[:200]}")
            continue
        seen[record["type"]] = seen.get(record["type"], 0) + 1
        for error in validators[record["type"]].iter_errors(record):
            where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path)
            problems.append(f"line {number} ({record['type']}){where}: {error.message[:300]}")
    for kind in expected:
        if kind not in seen:
            problems.append(f"no '{kind}' record")
    if problems:
        print("\n".join(problems))
        return 1
    print(f"valid: {len(lines)} records {seen}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: MIT

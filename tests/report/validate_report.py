#!/usr/bin/env python3
"""Validates a cuda-blockrun report (JSON lines) against docs/report.schema.json.

Usage: validate_report.py SCHEMA REPORT [--expect TYPE ...]

Implements the part of JSON Schema the schema uses (type, enum, required, properties,
additionalProperties, items, minItems, maxItems, anyOf, $ref), so that CI needs no package beyond
Debian's python3. Every line must be one JSON object whose "type" names a record of the schema;
each --expect TYPE must occur at least once. Prints what is wrong and exits 1, or prints a count.
"""
import json
import sys

TYPES = {
    "object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
}


def is_type(value, name):
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, TYPES[name])


def resolve(schema, root):
    while "$ref" in schema:
        node = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def check(value, schema, root, path, problems):
    schema = resolve(schema, root)
    if "anyOf" in schema:
        for option in schema["anyOf"]:
            trial = []
            check(value, option, root, path, trial)
            if not trial:
                return
        problems.append(f"{path}: matches none of the allowed forms: {json.dumps(value)[:200]}")
        return
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(is_type(value, name) for name in names):
            problems.append(f"{path}: expected {'/'.join(names)}, got {json.dumps(value)[:200]}")
            return
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                problems.append(f"{path}: missing field '{key}'")
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if key in properties:
                check(item, properties[key], root, f"{path}.{key}", problems)
            elif isinstance(extra, dict):
                check(item, extra, root, f"{path}.{key}", problems)
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            problems.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            problems.append(f"{path}: more than {schema['maxItems']} items")
        if "items" in schema:
            for index, item in enumerate(value):
                check(item, schema["items"], root, f"{path}[{index}]", problems)


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__)
        return 2
    schema_path, report_path = args[0], args[1]
    expected = [args[i + 1] for i, arg in enumerate(args) if arg == "--expect"]
    with open(schema_path) as f:
        root = json.load(f)
    problems, seen = [], {}
    with open(report_path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except ValueError as error:
            problems.append(f"line {number}: not JSON ({error}): {line[:200]}")
            continue
        if not isinstance(record, dict) or record.get("type") not in root["records"]:
            problems.append(f"line {number}: not a known record: {line[:200]}")
            continue
        seen[record["type"]] = seen.get(record["type"], 0) + 1
        check(record, root["records"][record["type"]], root, f"line {number} ({record['type']})", problems)
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

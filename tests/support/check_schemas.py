#!/usr/bin/env python3
"""Validates evidence folders against schemas/*.schema.json with python3-jsonschema,
an implementation independent of the one skewbench verify uses (valijson). A
folder of skewbench explore (explore.json) is checked too: explore.json, and
each finding's scenario.json and evidence; a file is checked as a bounds file
of skewbench explore.

usage: check_schemas.py SCHEMA_DIR FOLDER|BOUNDS_FILE...   exit 0 valid, 1 not valid, 77 no jsonschema
"""
import json
import pathlib
import sys
import warnings

try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is not installed")
    sys.exit(77)


def validator(schema_dir, name):
    schema = json.loads((schema_dir / f"{name}.schema.json").read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    # The schemas refer to each other by their $id (explore-bounds to
    # scenario's policy); RefResolver is in every jsonschema 4.
    store = {}
    for path in schema_dir.glob("*.schema.json"):
        other = json.loads(path.read_text())
        store[other["$id"]] = other
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        resolver = jsonschema.RefResolver.from_schema(schema, store=store)
    return cls(schema, resolver=resolver)


def main():
    schema_dir = pathlib.Path(sys.argv[1])
    names = ("summary", "scenario-evidence", "sweep", "cell", "manifest", "scenario", "explore", "explore-bounds")
    v = {n: validator(schema_dir, n) for n in names}
    problems = []

    def check(name, doc, where):
        for error in v[name].iter_errors(doc):
            problems.append(f"{where}: {error.json_path}: {error.message}")

    checked = 0
    for folder in map(pathlib.Path, sys.argv[2:]):
        if folder.is_file():
            check("explore-bounds", json.loads(folder.read_text()), folder)
            checked += 1
            continue
        if (folder / "explore.json").exists():
            check("explore", json.loads((folder / "explore.json").read_text()), folder / "explore.json")
            checked += 1
            for f in sorted(folder.glob("findings/*/*.json")):
                check("scenario" if f.name == "scenario.json" else "scenario-evidence", json.loads(f.read_text()), f)
                checked += 1
            continue
        check("manifest", json.loads((folder / "manifest.json").read_text()), folder / "manifest.json")
        checked += 1
        if (folder / "summary.json").exists():
            check("summary", json.loads((folder / "summary.json").read_text()), folder / "summary.json")
            checked += 1
            for f in sorted((folder / "scenarios").glob("*.json")):
                check("scenario-evidence", json.loads(f.read_text()), f)
                checked += 1
        if (folder / "sweep.json").exists():
            check("sweep", json.loads((folder / "sweep.json").read_text()), folder / "sweep.json")
            checked += 1
            with open(folder / "cells.jsonl") as lines:
                for number, line in enumerate(lines, 1):
                    check("cell", json.loads(line), f"{folder / 'cells.jsonl'}:{number}")
                    checked += 1
    for p in problems:
        print(p)
    print(f"{checked} documents checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

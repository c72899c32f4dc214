#!/usr/bin/env python3
"""Plays each case's scripted solution (eval/solutions/<id>.json) against a fresh copy of its
project, the way the agent's tools would, and proves that it solves the case.

For every case of the suite's YAML files:
  1. copy the project into a temporary git repository and commit it;
  2. replay the solution's file tools in order: read_file marks a file as read; edit_file needs
     the file read before (as the real tool does), an old_string found exactly once (unless
     replace_all) and changes it; write_file creates a file or replaces one that was read;
     other tools (grep, run_tests, ...) change nothing and are skipped;
  3. the resulting diff must be the case's reference patch, byte for byte (with
     --write-references it is written there instead);
  4. copy the check files over the tree and run the check: it must exit 0;
  5. every name in fail_to_pass and pass_to_pass must be a real test: printed as passing by the
     check (cargo, node --test) or defined in the test files (pytest, go test).

Usage: python3 eval/verify-solutions.py [--write-references] [CASE_ID...]
Exit status 0 when every case selected passes. Needs git and the toolchains of the checks;
PyYAML is used when installed, else a reader for the subset of YAML the suite files use.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

EVAL = Path(__file__).resolve().parent
SUITES = ["python.yaml", "rust.yaml", "javascript.yaml", "go.yaml"]
GIT = ["git", "-c", "user.name=eval", "-c", "user.email=eval@localhost", "-c", "commit.gpgsign=false",
       "-c", "core.autocrlf=false"]
CHECK_TIMEOUT = 600


def load_cases():
    cases = []
    for name in SUITES:
        path = EVAL / name
        text = path.read_text(encoding="utf-8")
        try:
            import yaml  # type: ignore
            raw = yaml.safe_load(text)
        except ImportError:
            raw = read_subset(text)
        for case in raw:
            case["_file"] = path
            cases.append(case)
    return cases


def read_subset(text):
    """The suite files' own subset of YAML: a list of mappings whose values are plain scalars,
    `>-` folded blocks, flow lists, and (under `check`) a nested mapping with block lists."""
    cases, case, nested, key_list, folded = [], None, None, None, None
    for line in text.splitlines():
        if folded is not None:
            target, key, indent = folded
            if line.strip() and len(line) - len(line.lstrip()) >= indent:
                target[key] = (target[key] + " " + line.strip()).strip()
                continue
            folded = None
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        depth = len(line) - len(line.lstrip())
        body = line.strip()
        if body.startswith("- ") and depth == 0:
            case, nested, key_list = {}, None, None
            cases.append(case)
            body, depth = body[2:], 2
        if body.startswith("- ") and key_list is not None:
            key_list.append(body[2:].strip())
            continue
        key, _, value = body.partition(":")
        value = value.strip()
        target = nested if (depth >= 4 and nested is not None) else case
        if depth == 2:
            nested = None
        key_list = None
        if value == "":
            if key == "check":
                nested = case[key] = {}
            else:
                key_list = target[key] = []
        elif value == ">-":
            target[key] = ""
            folded = (target, key, depth + 2)
        elif value.startswith("["):
            target[key] = [v.strip() for v in value.strip("[]").split(",") if v.strip()]
        elif value.startswith("{"):
            target[key] = dict(
                (k.strip(), v.strip()) for k, v in (p.split(":", 1) for p in value.strip("{}").split(",")))
        else:
            target[key] = value
    return cases


class Failed(Exception):
    pass


def run(cmd, cwd, shell=False, timeout=CHECK_TIMEOUT):
    return subprocess.run(cmd, cwd=cwd, shell=shell, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=timeout, text=True, errors="replace")


def replay(solution, root):
    """Applies the solution's file tools to `root`; returns the number of tool calls."""
    read = set()
    calls = 0
    turns = solution.get("turns")
    if not turns:
        raise Failed("the solution has no turns")
    for number, turn in enumerate(turns, 1):
        reply = turn.get("reply")
        if reply is None:
            raise Failed(f"turn {number} is not a reply")
        usage = reply.get("usage", {})
        if not (usage.get("input", 0) > 0 and usage.get("output", 0) > 0):
            raise Failed(f"turn {number} has no usage")
        blocks = reply.get("content", [])
        tools = [b["tool_call"] for b in blocks if "tool_call" in b]
        if number == len(turns) and (tools or not any("text" in b for b in blocks)):
            raise Failed("the last turn must be a text reply without tool calls")
        if number < len(turns) and not tools:
            raise Failed(f"turn {number} calls no tool, so the run would end there")
        for call in tools:
            calls += 1
            name, args = call["name"], call.get("arguments", {})
            if name == "read_file":
                path = root / args["path"]
                if not path.is_file():
                    raise Failed(f"turn {number}: read_file of missing {args['path']}")
                read.add(args["path"])
            elif name == "edit_file":
                rel = args["path"]
                if set(args) - {"path", "old_string", "new_string", "replace_all"}:
                    raise Failed(f"turn {number}: edit_file has unknown arguments {sorted(args)}")
                if rel not in read:
                    raise Failed(f"turn {number}: edit_file of {rel}, which was not read")
                path = root / rel
                text = path.read_text(encoding="utf-8")
                old, new = args["old_string"], args["new_string"]
                count = text.count(old)
                if count == 0:
                    raise Failed(f"turn {number}: old_string not found in {rel}: {old[:60]!r}")
                if count > 1 and not args.get("replace_all"):
                    raise Failed(f"turn {number}: old_string occurs {count} times in {rel}: {old[:60]!r}")
                with open(path, "w", encoding="utf-8", newline="") as f:
                    f.write(text.replace(old, new) if args.get("replace_all") else text.replace(old, new, 1))
            elif name == "write_file":
                rel = args["path"]
                path = root / rel
                if path.exists() and rel not in read:
                    raise Failed(f"turn {number}: write_file replaces {rel}, which was not read")
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "w", encoding="utf-8", newline="") as f:
                    f.write(args["content"])
                read.add(rel)
            elif name == "bash":
                raise Failed(f"turn {number}: bash calls are not replayed here; use the file tools")
    return calls


def names_are_real(case, root, output):
    check = case["check"]
    run_cmd = check["run"]
    missing = []
    for name in list(check.get("fail_to_pass", [])) + list(check.get("pass_to_pass", [])):
        if "pytest" in run_cmd:
            file, _, test = name.partition("::")
            path = root / file
            ok = path.is_file() and (not test or re.search(rf"^def {re.escape(test)}\(", path.read_text(), re.M))
        elif "cargo" in run_cmd:
            ok = re.search(rf"^test {re.escape(name)} \.\.\. ok$", output, re.M)
        elif "node" in run_cmd:
            ok = re.search(rf"^\s*ok \d+ - {re.escape(name)}$", output, re.M) or \
                re.search(rf"^\s*✔ {re.escape(name)} \(", output, re.M)
        elif "go test" in run_cmd:
            ok = any(re.search(rf"^func {re.escape(name)}\(t \*testing\.T\)", p.read_text(), re.M)
                     for p in root.rglob("*_test.go"))
        else:
            ok = True
        if not ok:
            missing.append(name)
    if missing:
        raise Failed(f"not tests of the check: {missing}")


def verify(case, write_references):
    case_id = case["id"]
    base = case["_file"].parent
    project = base / case["repo"]
    solution = json.loads((EVAL / "solutions" / f"{case_id}.json").read_text(encoding="utf-8"))
    reference = base / case["reference"]
    with tempfile.TemporaryDirectory(prefix=f"eval-{case_id}-") as tmp:
        root = Path(tmp) / "work"
        shutil.copytree(project, root)
        for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "case start"]):
            result = run(GIT + cmd, root)
            if result.returncode:
                raise Failed(f"git {cmd[0]}: {result.stdout}")
        calls = replay(solution, root)
        run(GIT + ["add", "-A"], root)
        diff = run(GIT + ["diff", "--cached", "--no-color", "--no-ext-diff"], root).stdout
        if not diff:
            raise Failed("the solution changes nothing")
        if write_references:
            reference.parent.mkdir(parents=True, exist_ok=True)
            reference.write_text(diff, encoding="utf-8")
        elif reference.read_text(encoding="utf-8") != diff:
            raise Failed(f"the solution's diff differs from {reference.relative_to(EVAL)}")
        files = case["check"].get("files")
        if files:
            shutil.copytree(base / files, root, dirs_exist_ok=True)
        result = run(case["check"]["run"], root, shell=True)
        if result.returncode != 0:
            tail = "\n".join(result.stdout.splitlines()[-30:])
            raise Failed(f"the check fails after the solution (exit {result.returncode}):\n{tail}")
        names_are_real(case, root, result.stdout)
        return len(solution["turns"]), calls


def main(argv):
    write_references = "--write-references" in argv
    wanted = [a for a in argv if not a.startswith("--")]
    cases = [c for c in load_cases() if not wanted or c["id"] in wanted]
    failed = 0
    for case in cases:
        try:
            turns, calls = verify(case, write_references)
            print(f"ok    {case['id']}: {turns} turns, {calls} tool calls; diff = reference; check passes")
        except (Failed, OSError, KeyError, subprocess.TimeoutExpired) as err:
            failed += 1
            print(f"FAIL  {case['id']}: {err}")
        sys.stdout.flush()
    print(f"{len(cases) - failed}/{len(cases)} solutions solve their case")
    return 1 if failed or not cases else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""The documentation's links and commands hold.

  check_docs.py SOURCE_DIR SKEWBENCH REMOTE_EFFECT

- Every relative link in README.md, CONTRIBUTING.md, docs/*.md and
  tests/data/*/README.md resolves: the file or folder exists and, for
  `file#anchor`, the file has a heading with that anchor (GitHub's rule:
  lower case, punctuation dropped, spaces as hyphens, -1, -2 for repeats).
- Every command in their shell blocks (```sh) exists: `skewbench CMD` (as
  build/bin/skewbench or skewbench) answers `CMD --help` with exit 0,
  remote-effect answers `--help`, and a `scripts/...` it runs is a file.

It first checks itself on a broken copy (a missing file, a missing anchor and
an unknown command must each be found), so that it cannot pass by finding
nothing. Exit 0 when everything holds, 1 with one line per problem.
"""

import glob
import os
import re
import subprocess
import sys
import tempfile

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```")


def slug(heading):
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)  # drops punctuation, keeps letters, digits, _ and -
    return text.replace(" ", "-")


def anchors(path):
    seen = {}
    out = set()
    in_fence = False
    for line in open(path, encoding="utf-8"):
        if FENCE.match(line):
            in_fence = not in_fence
        if in_fence or not re.match(r"^#{1,6} ", line):
            continue  # "#018 is one of ..." is a paragraph, not a heading
        base = slug(line.lstrip("#"))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else "%s-%d" % (base, n))
    return out


def link_problems(doc):
    problems = []
    in_fence = False
    for number, line in enumerate(open(doc, encoding="utf-8"), 1):
        if FENCE.match(line):
            in_fence = not in_fence
        if in_fence:
            continue
        for target in LINK.findall(line):
            if re.match(r"^[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
            if not os.path.exists(resolved):
                problems.append("%s:%d: link %s: no such file or folder" % (doc, number, target))
            elif anchor and os.path.isfile(resolved) and resolved.endswith(".md") and anchor not in anchors(resolved):
                problems.append("%s:%d: link %s: %s has no heading #%s" % (doc, number, target, path or doc, anchor))
    return problems


def fenced_commands(doc):
    """(line number, command words) of each command line in the shell blocks
    (```sh, ```bash, ```shell); other blocks are text, JSON or drawings."""
    out = []
    in_fence = False
    shell = False
    continued = ""
    for number, line in enumerate(open(doc, encoding="utf-8"), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            shell = in_fence and line.strip()[3:] in ("sh", "bash", "shell")
            continue
        if not shell:
            continue
        text = continued + line.split("#", 1)[0].strip()
        if text.endswith("\\"):
            continued = text[:-1] + " "
            continue
        continued = ""
        for part in re.split(r"&&|\|\||;|\|", text):
            words = part.split()
            while words and "=" in words[0] and not words[0].startswith(("-", "/")):
                words = words[1:]  # VAR=value prefixes
            if words:
                out.append((number, words))
    return out


def command_problems(doc, source_dir, skewbench, remote_effect):
    problems = []
    for number, words in fenced_commands(doc):
        program = os.path.basename(words[0])
        if program == "skewbench" and len(words) > 1 and not words[1].startswith("-"):
            run = subprocess.run([skewbench, words[1], "--help"], capture_output=True, text=True)
            if run.returncode != 0:
                problems.append("%s:%d: skewbench %s --help exits %d" % (doc, number, words[1], run.returncode))
        elif program == "remote-effect":
            run = subprocess.run([remote_effect, "--help"], capture_output=True, text=True)
            if run.returncode != 0:
                problems.append("%s:%d: remote-effect --help exits %d" % (doc, number, run.returncode))
        elif words[0].startswith("scripts/") and not os.path.isfile(os.path.join(source_dir, words[0])):
            problems.append("%s:%d: %s is not a file" % (doc, number, words[0]))
    return problems


def documents(source_dir):
    docs = [os.path.join(source_dir, "README.md"), os.path.join(source_dir, "CONTRIBUTING.md")]
    docs += sorted(glob.glob(os.path.join(source_dir, "docs", "*.md")))
    docs += sorted(glob.glob(os.path.join(source_dir, "tests", "data", "*", "README.md")))
    return [d for d in docs if os.path.exists(d)]


def self_check(skewbench, remote_effect):
    with tempfile.TemporaryDirectory() as folder:
        doc = os.path.join(folder, "README.md")
        with open(doc, "w") as f:
            f.write("# Title\n\n## A heading\n\n[ok](#a-heading) [gone](missing.md) [anchor](README.md#nowhere)\n\n"
                    "```sh\nbuild/bin/skewbench no-such-command --out x\n```\n")
        found = link_problems(doc) + command_problems(doc, folder, skewbench, remote_effect)
        wanted = ["missing.md", "#nowhere", "no-such-command"]
        missed = [w for w in wanted if not any(w in p for p in found)]
        if missed or len(found) != len(wanted):
            print("the checker itself is broken: on a broken copy it found %r" % found)
            return False
    return True


def main(argv):
    if len(argv) != 4:
        print(__doc__)
        return 2
    source_dir, skewbench, remote_effect = argv[1:]
    if not self_check(skewbench, remote_effect):
        return 1
    problems = []
    docs = documents(source_dir)
    for doc in docs:
        problems += link_problems(doc) + command_problems(doc, source_dir, skewbench, remote_effect)
    if problems:
        print("\n".join(problems))
        return 1
    print("ok: every relative link of %d documents resolves, and every command of their shell blocks exists"
          % len(docs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Helpers of scripts/mutants.sh (mutation testing, issue 43); not meant to be run by hand.

  mutants_lib.py sync TREE          < NUL-separated paths: copy them into TREE
  mutants_lib.py regex MISSED FILE... : a cargo-mutants `-F` regex naming the missed mutants
                                        of those files (nothing when there are none)
  mutants_lib.py summary OUT ELAPSED DOC SHARD MODULE... : the per-module table
"""
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys


def sync(tree):
    """Makes TREE hold exactly the given files of the work tree. A file whose content differs
    (changed since the last run, or left mutated by an interrupted run) is rewritten, with a
    new mtime so cargo rebuilds it; files gone from the work tree are removed (TREE/target is
    left alone)."""
    want = [p for p in sys.stdin.buffer.read().decode().split("\0") if p and os.path.lexists(p)]
    wanted = set(os.path.normpath(p) for p in want)
    for p in want:
        dst = os.path.join(tree, p)
        os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
        if os.path.islink(p):
            if not os.path.islink(dst) or os.readlink(dst) != os.readlink(p):
                if os.path.lexists(dst):
                    os.remove(dst)
                os.symlink(os.readlink(p), dst)
            continue
        if not os.path.isfile(p):
            continue
        data = open(p, "rb").read()
        try:
            same = open(dst, "rb").read() == data
        except OSError:
            same = False
        if not same:
            if os.path.islink(dst):
                os.remove(dst)
            with open(dst, "wb") as f:
                f.write(data)
            shutil.copymode(p, dst)
    for d, subdirs, names in os.walk(tree):
        rel = os.path.relpath(d, tree)
        if rel == "target" or rel.startswith("target" + os.sep):
            subdirs[:] = []
            continue
        for n in names:
            if os.path.normpath(os.path.join(rel, n)) not in wanted:
                os.remove(os.path.join(d, n))


def regex(missed, files):
    """A regex matching exactly the missed mutants (names with line and column) of FILES."""
    try:
        names = [line.rstrip("\n") for line in open(missed) if line.strip()]
    except OSError:
        return
    names = [n for n in names if any(n.startswith(f + ":") for f in files)]
    meta = set("\\.+*?()|[]{}^$")
    esc = lambda n: "".join("\\" + c if c in meta else c for c in n)
    if names:
        print("^(" + "|".join(esc(n) for n in names) + ")$")


KINDS = {"CaughtMutant": "caught", "MissedMutant": "missed", "Unviable": "unviable",
         "Timeout": "timeout"}


def outcomes(d):
    """name -> (file, outcome) of the mutants in D/mutants.out/outcomes.json."""
    try:
        data = json.load(open(os.path.join(d, "mutants.out", "outcomes.json")))
    except OSError:
        return {}
    res = {}
    for o in data["outcomes"]:
        sc = o["scenario"]
        if not isinstance(sc, dict) or "Mutant" not in sc:
            continue
        mu = sc["Mutant"]
        path = mu["file"] if isinstance(mu.get("file"), str) else mu["source_file"]["path"]
        res[mu["name"]] = (path, KINDS.get(o["summary"], o["summary"]))
    return res


def key(name):
    """A mutant's name without its line and column, which move with every edit."""
    return re.sub(r":\d+:\d+:", ":", name)


def summary(out, elapsed, doc, shard, names):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mutants.sh")
    listing = subprocess.run(["bash", script, "--modules-files"], capture_output=True,
                             text=True, check=True).stdout
    mods = {}
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in names:
            mods[parts[0]] = parts[1:]

    def module_of(path):
        for m, globs in mods.items():
            if any(fnmatch.fnmatch(path, g) for g in globs):
                return m
        return "?"

    first = outcomes(out)
    second = outcomes(os.path.join(out, "noalloc"))
    third = outcomes(os.path.join(out, "loom"))
    empty = lambda: dict(mutants=0, caught=0, noalloc=0, loom=0, missed=0, unviable=0,
                         timeout=0)
    rows = {m: empty() for m in mods}
    missed = []
    for name, (path, k) in first.items():
        r = rows.setdefault(module_of(path), empty())
        r["mutants"] += 1
        # A mutant a later pass catches (without alloc, or in the loom models) is caught; one
        # that does not build there either (code only that configuration compiles) is unviable.
        for later, column in ((second, "noalloc"), (third, "loom")):
            outcome = later.get(name, (None, None))[1]
            if k == "missed" and outcome in ("caught", "timeout"):
                r[column] += 1
                k = outcome
            elif k == "missed" and outcome == "unviable":
                k = "unviable"
        r[k] = r.get(k, 0) + 1
        if k == "missed":
            missed.append(name)
    try:
        text = open(doc).read()
    except OSError:
        text = ""
    explained = {key(n) for n in re.findall(r"`([^`\n]+)`", text)}
    unexplained = [n for n in missed if key(n) not in explained]
    lines = [f"cargo-mutants, modules {', '.join(mods)}" + (f", shard {shard}" if shard else "")
             + f": {elapsed} s", "",
             "| module | mutants | caught | of which without alloc | of which by loom "
             "| unviable | timeouts | missed |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for m, r in rows.items():
        lines.append(f"| {m} | {r['mutants']} | {r['caught']} | {r['noalloc']} | {r['loom']} "
                     f"| {r['unviable']} | {r['timeout']} | {r['missed']} |")
    lines.append("")
    for n in missed:
        note = "" if key(n) in explained else " (not explained in docs/mutants.md)"
        lines.append(f"missed{note}: {n}")
    open(os.path.join(out, "summary.md"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))
    open(os.path.join(out, "unexplained.txt"), "w").write("".join(n + "\n" for n in unexplained))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "sync":
        sync(args[0])
    elif cmd == "regex":
        regex(args[0], args[1:])
    elif cmd == "summary":
        summary(args[0], int(args[1]), args[2], args[3], args[4:])
    else:
        sys.exit(f"mutants_lib.py: unknown command {cmd}")

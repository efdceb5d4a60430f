#!/usr/bin/env python3
"""Bounds of core/ and fs/ (issue 24, "Bounds"). Fails (exit 1) on:

Files. A .c file of core/ or fs/ over MAX_FILE_LINES lines, unless it is
in LONG_FILES with its reason.

Functions. A top-level function definition of a .c or .h file of core/ or
fs/ over MAX_FUNCTION_LINES lines, unless it is in LONG_FUNCTIONS. The
house style puts a function's opening brace on a line of its own at
column 0 (and nothing else does: struct and array braces end a line), and
its closing brace at column 0: a function's length is counted from the
line of that opening brace to the line of its closing brace, both
included. Its name is the first NAME( in the lines right above the brace.

Duplicates. `duplicates --repo core` and `--repo fs` (a tool of this
workplace; where it is not installed the part is skipped, "skipped:
duplicates not installed", and does not fail) list the pairs of places
sharing six or more lines. Rows the tool marks "boilerplate" (thin shapes
that recur across a folder) are not judged. Every other pair must be in
DUPLICATES. A pair is keyed, not by line numbers (they move), but by its
two files and, on each side, the top-level function its first line stands
in (for a place outside any function: the first NAME( of its lines, else
"-"); the two sides in sorted order.

Stale entries: an allowed file now within the limit, an allowed function
now short or gone, fail the check, so that the lists shrink as the code
is split. A DUPLICATES entry the tool no longer shows is only a warning
(what it finds depends on its time budget).

Prints one summary line: "bounds: 3 files over 1500 lines allowed, ...,
0 new".
"""
import os
import re
import shutil
import subprocess
import sys

MAX_FILE_LINES = 1500
MAX_FUNCTION_LINES = 100

# path: reason
LONG_FILES = {
}

# "path:function": reason
LONG_FUNCTIONS = {
}

# (side, side), each "path:function" as keyed above (sorted): reason.
# Today's pairs, to be merged or found distinct as the code is split.
DUPLICATES = {
    # core/
    ("core/coordination/coordinator.c:mk_coord_lock", "core/replication/partition.c:mk_partition_test_lock"):
        "lock, trylock and unlock of an opaque struct: three one-line wrappers each",
    ("core/storage/index.h:mk_offset_index_init", "core/storage/timeindex.h:mk_time_index_init"):
        "declarations alike in shape: Kafka's offset and time indexes, each an entry file of its own kind",
    ("core/base/config.c:mk_config_defaults", "core/base/config.c:mk_config_defaults"):
        "the defaults of two key tables, alike in shape",
    ("core/base/errlog.c:mk_errlog_add", "core/base/errlog.c:mk_errlog_hold"):
        "errlog.c: adding and holding a line, alike in shape; not yet merged",
    ("core/coordination/assignor.c:mk_assign_round_robin",
     "core/coordination/assignor.c:mk_assign_round_robin"):
        "two sort steps of one assignor, alike in shape",
    # fs/
    ("fs/nodes.c:list_producers", "fs/nodes.c:list_topics"):
        "nodes.c: listings of two tables alike in shape; not yet merged",
    ("fs/nodes_groups.c:mk_groups_mkdir", "fs/nodes_txn.c:mk_txn_node_mkdir"):
        "mkdir, rmdir and /ctl expiry of /groups and /transactions: one shape, two coordinators",
    ("fs/nodes_groups.c:mk_groups_write_heartbeat", "fs/nodes_groups.c:mk_groups_write_seek"):
        "two commands' preludes (the copy for the usage message, the words), alike in shape",
    ("fs/nodes_groups.h:mk_groups_mkdir", "fs/nodes_txn.h:mk_txn_node_mkdir"):
        "declarations of mkdir, rmdir and /ctl expiry of two coordinators (shape only)",
    ("fs/nodes_txn.c:mk_txn_node_read_epoch", "fs/nodes_txn.c:mk_txn_node_read_state"):
        "read nodes of one transaction, alike in shape",
    ("fs/ops.c:op_mkdir", "fs/ops.c:op_rmdir"):
        "ops.c: mkdir and rmdir replies, alike; not yet merged",
}

top = sys.argv[1] if len(sys.argv) > 1 else "."
FOLDERS = ["core", "fs"]


def sources(ends):
    for folder in FOLDERS:
        for d, _, names in sorted(os.walk(os.path.join(top, folder))):
            for n in sorted(names):
                if n.endswith(ends):
                    yield os.path.relpath(os.path.join(d, n), top)


def lines_of(path):
    return open(os.path.join(top, path), encoding="utf-8").read().splitlines()


def functions(path):
    """[(name, first line, last line)], 1-based, of path's top-level
    function definitions."""
    text = lines_of(path)
    found = []
    for i, line in enumerate(text):
        if line.rstrip() != "{":
            continue
        k, sig = i - 1, []
        while k >= 0 and text[k].strip() and not text[k].startswith("#") \
                and not text[k].rstrip().endswith((";", "}", "*/")):
            sig.insert(0, text[k])
            k -= 1
        m = re.search(r"(\w+)\s*\(", " ".join(sig))
        j = i + 1
        while j < len(text) and not text[j].startswith("}"):
            j += 1
        found.append((m.group(1) if m else f"line{i + 1}", i + 1, j + 1))
    return found


def check_files():
    new = stale = 0
    for path in sources(".c"):
        n = len(lines_of(path))
        if n > MAX_FILE_LINES and path not in LONG_FILES:
            print(f"{path}: {n} lines, over {MAX_FILE_LINES}")
            new += 1
        elif n <= MAX_FILE_LINES and path in LONG_FILES:
            print(f"stale: {path} has {n} lines: remove it from LONG_FILES")
            stale += 1
    for path in LONG_FILES:
        if not os.path.exists(os.path.join(top, path)):
            print(f"stale: {path} is gone: remove it from LONG_FILES")
            stale += 1
    return new, stale


def check_functions():
    new = stale = 0
    long = {}
    seen = set()
    for path in sources((".c", ".h")):
        for name, first, last in functions(path):
            key = f"{path}:{name}"
            seen.add(key)
            if last - first + 1 > MAX_FUNCTION_LINES:
                long[key] = last - first + 1
    for key, n in sorted(long.items()):
        if key not in LONG_FUNCTIONS:
            print(f"{key}: {n} lines, over {MAX_FUNCTION_LINES}")
            new += 1
    for key in LONG_FUNCTIONS:
        if key not in long:
            why = "is gone" if key not in seen else "is short now"
            print(f"stale: {key} {why}: remove it from LONG_FUNCTIONS")
            stale += 1
    return new, stale


ROW = re.compile(r"^D\d+ (\S+):(\d+)-(\d+) ~ (\S+):(\d+)-(\d+)(.*)$")


def side_key(path, first, last, funcs):
    if path not in funcs:
        funcs[path] = functions(path) if os.path.exists(os.path.join(top, path)) else []
    for name, a, b in funcs[path]:
        if a <= first <= b:
            return f"{path}:{name}"
    text = lines_of(path)[first - 1:last]
    m = re.search(r"(\w+)\s*\(", " ".join(text))
    return f"{path}:{m.group(1) if m else '-'}"


def check_duplicates():
    tool = shutil.which("duplicates")
    if not tool:
        print("skipped: duplicates not installed")
        return 0, 0, None
    new, found, funcs, complete = 0, set(), {}, True
    for folder in FOLDERS:
        out = subprocess.run([tool, "--repo", os.path.join(top, folder), "--most", "200",
                              "--seconds", "120"], capture_output=True, text=True,
                             cwd=top).stdout
        for line in out.splitlines():
            if line.startswith("incomplete:"):
                print(f"duplicates --repo {folder}: {line}")
                complete = False
            m = ROW.match(line)
            if not m or "boilerplate" in m.group(7):
                continue
            a = (f"{folder}/{m.group(1)}", int(m.group(2)), int(m.group(3)))
            b = (f"{folder}/{m.group(4)}", int(m.group(5)), int(m.group(6)))
            key = tuple(sorted((side_key(*a, funcs), side_key(*b, funcs))))
            found.add(key)
            if key not in DUPLICATES:
                print(f"duplicate: {a[0]}:{a[1]}-{a[2]} ~ {b[0]}:{b[1]}-{b[2]} "
                      f"(key {key[0]} ~ {key[1]}): merge them, or add the key "
                      "to DUPLICATES with a reason")
                new += 1
    stale = [k for k in DUPLICATES if k not in found]
    for k in stale:
        print(f"warning: the allowed pair {k[0]} ~ {k[1]} was not found"
              + ("" if complete else " (the tool did not finish)")
              + ": remove it from DUPLICATES if it is gone")
    return new, len(stale), len(DUPLICATES) - len(stale)


fnew, fstale = check_files()
gnew, gstale = check_functions()
dnew, dstale, dallowed = check_duplicates()
pairs = ("duplicates skipped" if dallowed is None else
         f"{dallowed} duplicate pairs allowed ({dstale} allowed not found)")
print(f"bounds: {len(LONG_FILES) - fstale} files over {MAX_FILE_LINES} lines allowed, "
      f"{len(LONG_FUNCTIONS) - gstale} long functions allowed, {pairs}, "
      f"{fnew + gnew + dnew} new, {fstale + gstale} stale")
sys.exit(1 if fnew + gnew + dnew + fstale + gstale else 0)

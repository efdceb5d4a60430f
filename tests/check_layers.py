#!/usr/bin/env python3
"""The layering of core/ (README, "Layout"): each folder under core/ is a
layer, lowest first; a module may include headers of its own layer or lower
ones, never of a higher layer, and core/ never includes fs/ or FUSE."""
import os
import re
import sys

ORDER = ["base", "storage", "replication", "coordination", "client"]
root = os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".", "core")
where = {}
for rank, layer in enumerate(ORDER):
    for name in os.listdir(os.path.join(root, layer)):
        if name.endswith(".h"):
            where[name] = (rank, layer)
bad = 0
for rank, layer in enumerate(ORDER):
    folder = os.path.join(root, layer)
    for name in sorted(os.listdir(folder)):
        if not name.endswith((".c", ".h")):
            continue
        text = open(os.path.join(folder, name), encoding="utf-8").read()
        for inc in re.findall(r'#include [<"]([^>"]+)[>"]', text):
            if "fuse" in inc or inc.startswith("fs/"):
                print(f"core/{layer}/{name}: includes {inc} (no FUSE in core)")
                bad += 1
            elif inc in where and where[inc][0] > rank:
                print(f"core/{layer}/{name}: includes {inc} of the higher layer {where[inc][1]}")
                bad += 1
print(f"{bad} layering violations")
sys.exit(1 if bad else 0)

#!/usr/bin/env python3
"""The layering of core/ and the include graph of core/, fs/ and net/
(README, "Layout"). Fails (exit 1) on either of:

Layers. Each folder under core/ is a layer, lowest first; a module may
include headers of its own layer or lower ones, never of a higher layer,
and core/ never includes fs/ or FUSE.

Adapters. fs/ (FUSE) and net/ (the Kafka protocol) are adapters over
core/: each may include core's headers and its own, never the other's,
and core/ includes neither (a header name found in an adapter's folder
and not in core/).

Include circles. A module is a .c/.h pair with the same stem in one folder
(core/LAYER/, fs/ or net/): core/replication/cluster is cluster.c with
cluster.h.
An edge a -> b: a file of module a (its .c or its .h) has a quoted
#include of b.h, b being another module; such a name is looked up in the
includer's own folder first (fs/ beside fs/), then in every layer of core/
(header names are unique there). A module including its own header is no
edge, and neither is a system header. The graph of core/, fs/ and net/ together
must have no cycle, within one layer or folder or across them; a cycle is
printed as "core/replication/cluster -> metadata -> cluster" (a module of
another folder is named in full).

Pieces of one module: when a folder holds a private header X_internal.h,
that header and every file of that folder whose stem is X or starts with
"X_" (log.c, log_loader.c, log_loader.h, log_internal.h...) make up the one
module X, so that they may include each other's headers freely: a circle
among the pieces of a module is no circle. Without an X_internal.h there is
no such grouping: fs/nodes.c and fs/nodes_groups.c are two modules.

A circle known today and left to a later change stands in KNOWN below with
its reason; a KNOWN circle that is gone fails the check too.
"""
import os
import re
import sys

ORDER = ["base", "storage", "replication", "coordination", "client"]
# The adapters over core/: each may include core/, never another adapter.
ADAPTERS = ["fs", "net"]
top = sys.argv[1] if len(sys.argv) > 1 else "."
root = os.path.join(top, "core")
INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]', re.M)


def layering():
    """The layer rule of core/; the number of violations."""
    where = {}
    for rank, layer in enumerate(ORDER):
        for name in os.listdir(os.path.join(root, layer)):
            if name.endswith(".h"):
                where[name] = (rank, layer)
    bad = 0
    adapted = adapter_headers()
    for rank, layer in enumerate(ORDER):
        folder = os.path.join(root, layer)
        for name in sorted(os.listdir(folder)):
            if not name.endswith((".c", ".h")):
                continue
            text = open(os.path.join(folder, name), encoding="utf-8").read()
            for _, inc in INCLUDE.findall(text):
                if "fuse" in inc or inc.startswith("fs/"):
                    print(f"core/{layer}/{name}: includes {inc} (no FUSE in core)")
                    bad += 1
                elif inc.startswith("net/") or (inc in adapted and inc not in where):
                    print(f"core/{layer}/{name}: includes {inc} of an adapter "
                          "(core includes no adapter)")
                    bad += 1
                elif inc in where and where[inc][0] > rank:
                    print(f"core/{layer}/{name}: includes {inc} of the higher layer {where[inc][1]}")
                    bad += 1
    return bad


def adapter_headers():
    """{header name: its adapter folder} of the headers of fs/ and net/."""
    found = {}
    for folder in ADAPTERS:
        path = os.path.join(top, folder)
        for name in (os.listdir(path) if os.path.isdir(path) else []):
            if name.endswith(".h"):
                found.setdefault(name, folder)
    return found


def adapters():
    """No adapter includes another's header (one not its own nor core's);
    the number of violations."""
    core = set()
    for layer in ORDER:
        core.update(n for n in os.listdir(os.path.join(root, layer)) if n.endswith(".h"))
    where = adapter_headers()
    bad = 0
    for folder in ADAPTERS:
        path = os.path.join(top, folder)
        names = sorted(os.listdir(path)) if os.path.isdir(path) else []
        own = set(n for n in names if n.endswith(".h"))
        for name in names:
            if not name.endswith((".c", ".h")):
                continue
            text = open(os.path.join(path, name), encoding="utf-8").read()
            for _, inc in INCLUDE.findall(text):
                other = [a for a in ADAPTERS if a != folder and inc.startswith(a + "/")]
                if not other and inc not in own and inc not in core \
                        and where.get(inc, folder) != folder:
                    other = [where[inc]]
                if other:
                    print(f"{folder}/{name}: includes {inc} of {other[0]}/ "
                          "(an adapter includes no other adapter)")
                    bad += 1
    return bad


def folder_modules(folder):
    """{file name: module name} for the .c and .h files of one folder."""
    names = sorted(n for n in os.listdir(os.path.join(top, folder))
                   if n.endswith((".c", ".h")))
    owners = [n[:-len("_internal.h")] for n in names if n.endswith("_internal.h")]
    module = {}
    for n in names:
        stem = n[:-2]
        mine = [x for x in owners if stem == x or stem.startswith(x + "_")]
        # The longest owner wins (log_index_internal.h inside log_...).
        module[n] = f"{folder}/{max(mine, key=len) if mine else stem}"
    return module


def include_graph():
    """{module: {module it includes: the first file that does it}}."""
    folders = [f"core/{layer}" for layer in ORDER] + \
        [a for a in ADAPTERS if os.path.isdir(os.path.join(top, a))]
    modules = {f: folder_modules(f) for f in folders}
    core_headers = {}
    for f in folders[:len(ORDER)]:
        for n, m in modules[f].items():
            if n.endswith(".h"):
                core_headers[n] = m
    graph = {}
    for f in folders:
        for n, m in modules[f].items():
            graph.setdefault(m, {})
            text = open(os.path.join(top, f, n), encoding="utf-8").read()
            for kind, inc in INCLUDE.findall(text):
                if kind != '"':
                    continue
                to = modules[f].get(inc) if inc.endswith(".h") else None
                to = to or core_headers.get(inc)
                if to and to != m:
                    graph[m].setdefault(to, f"{f}/{n}")
    return graph


def cycles(graph):
    """The circles of the graph: in each strongly connected component of
    more than one module (Tarjan's algorithm), for every edge a -> b inside
    it, the shortest way from b back to a; each circle once, from its
    smallest module, sorted."""
    index, low, stack, on, comps = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(set(comp))

    def way(src, dst, comp):
        """The shortest path src ... dst inside comp (breadth first)."""
        prev, todo = {src: None}, [src]
        while dst not in prev:
            nxt = []
            for v in todo:
                for w in sorted(graph[v]):
                    if w in comp and w not in prev:
                        prev[w] = v
                        nxt.append(w)
            todo = nxt
        path = [dst]
        while prev[path[-1]] is not None:
            path.append(prev[path[-1]])
        return path[::-1]

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    found = set()
    for comp in comps:
        for a in sorted(comp):
            for b in sorted(w for w in graph[a] if w in comp):
                ring = [a] + way(b, a, comp)[:-1]
                i = ring.index(min(ring))
                found.add(tuple(ring[i:] + ring[:i]))
    return sorted(list(ring) + [ring[0]] for ring in found)


def show(path):
    folder = path[0].rsplit("/", 1)[0]
    return " -> ".join([path[0]] + [m.rsplit("/", 1)[1] if m.rsplit("/", 1)[0] == folder
                                    else m for m in path[1:]])


# Circles known today whose breaking is left to a later change, each with
# its reason: (the modules of the circle, in any order), reason. A listed
# circle that no longer exists fails the check too, so the list shrinks.
KNOWN = [
]

bad = layering() + adapters()
graph = include_graph()
new = 0
seen = set()
for path in cycles(graph):
    how = ", ".join(f"{graph[a][b]} includes {b.rsplit('/', 1)[1]}.h"
                    for a, b in zip(path, path[1:]))
    known = [i for i, (mods, _) in enumerate(KNOWN) if mods == set(path)]
    seen.update(known)
    if known:
        print(f"include circle (known, allowed): {show(path)}")
    else:
        print(f"include circle: {show(path)} ({how})")
        new += 1
stale = [mods for i, (mods, _) in enumerate(KNOWN) if i not in seen]
for mods in stale:
    print(f"stale: the known circle {' <-> '.join(sorted(mods))} is gone: "
          "remove it from KNOWN in tests/check_layers.py")
print(f"{bad} layering violations, {new} include circles "
      f"({len(seen)} known allowed, {len(stale)} stale)")
sys.exit(1 if bad or new or stale else 0)

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""No loop of calls between the daemon's modules (docs/architecture.md, "Layers").

Reads the symbols each object of .output/src/daemon/ defines and needs (nm), draws an edge
from a module to every module whose function or data it uses, and reports each strongly
connected set of more than one module with the calls that close it. The files of
src/daemon/redirect/redirect*.c are one module (redirect_internal.h is their interface).
Exit 0 when there is no loop, 1 when there is, 2 without objects (run make first).
"""
import collections
import glob
import os
import subprocess
import sys


def module(path):
    name = os.path.basename(path)[:-2]
    return "redirect" if name.startswith("redirect") else name


def main():
    objs = sorted(glob.glob(".output/src/daemon/**/*.o", recursive=True))
    if not objs:
        print("module-cycles: no objects under .output/src/daemon (make first)")
        return 2
    defined, needed = {}, collections.defaultdict(set)
    for o in objs:
        for line in subprocess.check_output(["nm", o], text=True).splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "TDRB":
                defined[f[2]] = module(o)
            elif len(f) == 2 and f[0] == "U":
                needed[module(o)].add(f[1])
    calls = collections.defaultdict(set)
    for m, syms in needed.items():
        for s in syms:
            if s in defined and defined[s] != m:
                calls[m].add((defined[s], s))
    graph = {m: {b for b, _ in c} for m, c in calls.items()}
    index, low, stack, on, loops = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
                loops.append(sorted(comp))

    nodes = set(graph) | {b for bs in graph.values() for b in bs}
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    for comp in loops:
        print("loop: " + " <-> ".join(comp))
        for a in comp:
            for b, s in sorted(calls.get(a, ())):
                if b in comp:
                    print(f"    {a} calls {b}: {s}()")
    print(f"{len(nodes)} modules, {len(loops)} loops of calls")
    return 1 if loops else 0


if __name__ == "__main__":
    sys.exit(main())

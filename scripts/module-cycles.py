#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""No loop of calls between the modules of a program (docs/architecture.md, "Layers").

For the daemon (.output/src/daemon/) and the CLI (.output/src/ctl/) in turn, reads the
symbols each object defines and needs (nm), draws an edge
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


def check(tree):
    """Print the loops among the objects under tree; the number of modules and of loops."""
    objs = sorted(glob.glob(f"{tree}/**/*.o", recursive=True))
    if not objs:
        return 0, None
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
    return len(nodes), len(loops)


def main():
    counts = []
    for name, tree in (("daemon", ".output/src/daemon"), ("vsockmapctl", ".output/src/ctl")):
        n, loops = check(tree)
        if loops is None:
            print(f"module-cycles: no objects under {tree} (make first)")
            return 2
        counts.append((name, n, loops))
    print(", ".join(f"{name}: {n} modules, {loops} loops of calls" for name, n, loops in counts))
    return 1 if any(loops for _, _, loops in counts) else 0


if __name__ == "__main__":
    sys.exit(main())

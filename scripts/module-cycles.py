#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""No circle of includes or calls between the modules of a program (docs/architecture.md, "Layers").

For the daemon (src/daemon/, its objects in .output/src/daemon/) and the CLI (src/ctl/,
.output/src/ctl/) in turn, draws an arrow from a module to every module
- whose header it includes (#include "x.h", the sources and headers of src/), and
- whose function or data it uses (the symbols each object defines and needs, nm),
and reports each strongly connected set of more than one module with the arrows that close
it. A module is x.c with x.h; a header without a source is a module of its own. The files
that share an x_internal.h (its interface inside) are one module x: redirect_internal.h makes
src/daemon/redirect/redirect*.c one module "redirect". Headers from outside the program's
folder (src/common/, include/, generated ones) are below it and not drawn.
Exit 0 when there is no circle, 1 when there is, 2 without objects (run make first).
"""
import collections
import glob
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def read_includes(files):
    """{file: [header names it includes]}"""
    out = {}
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            out[f] = INCLUDE.findall(fh.read())
    return out


def modules_of(files, includes):
    """{file: its module}: x.c and x.h are x; the includers of an x_internal.h are x."""
    mod = {f: stem(f) for f in files}
    for f in files:
        for h in includes[f]:
            if h.endswith("_internal.h"):
                mod[f] = h[: -len("_internal.h")]
    for f in files:
        if f.endswith(".h") and stem(f).endswith("_internal"):
            mod[f] = stem(f)[: -len("_internal")]
    # a header goes with its source's module (bpf_dataplane.h with bpf_dataplane.c)
    by_source = {stem(f): mod[f] for f in files if f.endswith(".c")}
    for f in files:
        if f.endswith(".h") and stem(f) in by_source:
            mod[f] = by_source[stem(f)]
    return mod


def include_arrows(files, includes, mod):
    """{module: {(module it includes, "a.c includes b.h")}}"""
    header = {os.path.basename(f): f for f in files if f.endswith(".h")}
    arrows = collections.defaultdict(set)
    for f in files:
        for h in includes[f]:
            if h in header and mod[header[h]] != mod[f]:
                arrows[mod[f]].add((mod[header[h]], f"includes {h} ({os.path.basename(f)})"))
    return arrows


def call_arrows(objs, src_tree, out_tree, mod):
    """{module: {(module it calls, "calls f()")}}"""
    def module(o):
        src = os.path.join(src_tree, os.path.relpath(o, out_tree))[:-2] + ".c"
        return mod.get(src, stem(o))

    defined, needed = {}, collections.defaultdict(set)
    for o in objs:
        for line in subprocess.check_output(["nm", o], text=True).splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "TDRB":
                defined[f[2]] = module(o)
            elif len(f) == 2 and f[0] == "U":
                needed[module(o)].add(f[1])
    arrows = collections.defaultdict(set)
    for m, syms in needed.items():
        for s in syms:
            if s in defined and defined[s] != m:
                arrows[m].add((defined[s], f"calls {s}()"))
    return arrows


def circles(graph):
    """The strongly connected sets of more than one node (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
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
                found.append(sorted(comp))

    nodes = set(graph) | {b for bs in graph.values() for b in bs}
    sys.setrecursionlimit(max(1000, 4 * len(nodes)))
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return nodes, found


def check(src_tree, out_tree):
    """Print the circles in one program; its number of modules and of circles (None: no objects)."""
    files = sorted(glob.glob(f"{src_tree}/**/*.[ch]", recursive=True))
    # the objects of today's sources: one left by a file since moved or removed is not drawn
    objs = [o for o in sorted(glob.glob(f"{out_tree}/**/*.o", recursive=True))
            if os.path.join(src_tree, os.path.relpath(o, out_tree))[:-2] + ".c" in files]
    if not objs:
        return 0, None
    includes = read_includes(files)
    mod = modules_of(files, includes)
    arrows = collections.defaultdict(set)
    for kind in (include_arrows(files, includes, mod), call_arrows(objs, src_tree, out_tree, mod)):
        for a, bs in kind.items():
            arrows[a] |= bs
    graph = {a: {b for b, _ in bs} for a, bs in arrows.items()}
    nodes, found = circles(graph)
    for comp in found:
        print(f"circle of {len(comp)} modules: " + " <-> ".join(comp))
        for a in comp:
            for b, how in sorted(arrows.get(a, ())):
                if b in comp:
                    print(f"    {a} -> {b}: {how}")
    return len(nodes), len(found)


def main():
    counts = []
    for name, tree in (("daemon", "src/daemon"), ("vsockmapctl", "src/ctl")):
        n, found = check(tree, os.path.join(".output", tree))
        if found is None:
            print(f"module-cycles: no objects under .output/{tree} (make first)")
            return 2
        counts.append((name, n, found))
    print(", ".join(f"{name}: {n} modules, {c} circles of includes and calls"
                    for name, n, c in counts))
    return 1 if any(c for _, _, c in counts) else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Guest instructions per command from insncount dumps.

    analyze.py [--name rdmablkd] [--ref nvmet] INSN_DIR BINARY

INSN_DIR holds the plugin's dumps (dump.K), the guest's marks ("K LABEL start|end COMMANDS"; a
mark's last line wins), its kallsyms and NAME.maps (the maps of the process running BINARY, a
non-PIE Go binary whose symbols `go tool nm` gives). LABEL is CONFIG.JOB.REST: the configuration
counted (rdmablkd, nvmet, kernel, ublk, nbd, ...), the job, then anything (round). For every window
(a label's start and end marks): the commands completed in it and guest instructions per command in
all, in the kernel, in BINARY's code and in other user code (fio, libc, the vDSO, the lab's
scripts); then per job every configuration against REF (median of its windows), with the kernel
functions and BINARY's functions that differ most per command, and — where both run BINARY — how
often per command BINARY's functions were called (the executions of the block at a function's
entry: a poll loop's passes, CQ polls, cgo calls, scheduler rounds; inlined calls are not seen). A translated block is charged to
the function its first instruction is in. Where the dumps carry the blocks' static counts (insncount.c), a
second table gives per window what else TCG charges for: blocks run, memory accesses, vector and system
instructions, indirect block exits, each split into kernel / BINARY / other user code."""
import argparse
import bisect
import collections
import os
import statistics
import subprocess

KERNEL_BASE = 0xFFFF800000000000


def load_dump(path):
    """{(vaddr, insns): executions}, and {(vaddr, insns): (mem, vec, sys, ind)} where the dump
    carries the blocks' static counts (insncount.c's header)."""
    d, static = {}, {}
    with open(path) as f:
        for line in f:
            p = line.split()
            key = (p[0], int(p[1]))
            d[key] = int(p[2])
            if len(p) >= 7:
                static[key] = tuple(int(x) for x in p[3:7])
    return d, static


class Symbols:
    def __init__(self, pairs):
        pairs.sort()
        self.addrs = [a for a, _ in pairs]
        self.names = [s for _, s in pairs]
        self.entry = dict(pairs)  # a function's first address: its name
        self.memo = {}

    def of(self, addr):
        s = self.memo.get(addr)
        if s is None:
            i = bisect.bisect_right(self.addrs, addr) - 1
            s = self.names[i] if i >= 0 else "?"
            self.memo[addr] = s
        return s


def kernel_symbols(path):
    pairs = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 3 and p[1] in "tTwW":
                pairs.append((int(p[0], 16), p[2]))
    return Symbols(pairs)


def go_symbols(binary):
    out = subprocess.run(["go", "tool", "nm", "-n", binary], capture_output=True, text=True, check=True).stdout
    pairs = []
    for line in out.splitlines():
        p = line.split(None, 2)
        if len(p) == 3 and p[1] in "Tt":
            pairs.append((int(p[0], 16), p[2]))
    return Symbols(pairs)


def text_range(maps, name):
    lo = hi = None
    if not os.path.exists(maps):
        return None, None
    with open(maps) as f:
        for line in f:
            p = line.split()
            # name's baseline build (BASELINE=REV: name-base, non-PIE like it, at the same
            # addresses) counts as name's code too: the guest keeps the maps of whichever ran last
            if len(p) >= 6 and (p[5].endswith("/" + name) or p[5].endswith("/" + name + "-base")) and "x" in p[1]:
                a, b = (int(x, 16) for x in p[0].split("-"))
                lo = a if lo is None else min(lo, a)
                hi = b if hi is None else max(hi, b)
    return lo, hi


def windows(d, name, ksyms, gsyms, base_syms=None):
    marks = {}
    with open(os.path.join(d, "marks")) as f:
        for line in f:
            k, label, edge, ios = line.split()
            marks[int(k)] = (label, edge, int(ios))
    lo, hi = text_range(os.path.join(d, name + ".maps"), name)
    starts = {label: (k, ios) for k, (label, edge, ios) in sorted(marks.items()) if edge == "start"}
    out = []
    for k, (label, edge, ios) in sorted(marks.items()):
        if edge != "end" or label not in starts:
            continue
        k0, ios0 = starts[label]
        cmds = ios - ios0
        if cmds <= 0:
            continue  # an idle window
        # a baseline configuration's window (ublk-base.rw32.r1) ran name-base: its symbols
        syms = base_syms if base_syms is not None and label.split(".")[0].endswith("-base") else gsyms
        a, _ = load_dump(os.path.join(d, "dump.%d" % k0))
        b, static = load_dump(os.path.join(d, "dump.%d" % k))
        parts, kfun, gfun = collections.Counter(), collections.Counter(), collections.Counter()
        # TCG's cost drivers per part: blocks run, memory accesses, vector and system instructions,
        # indirect block exits (see insncount.c)
        drivers = collections.Counter()
        gcall = collections.Counter()  # executions of the block at a function's entry: its calls
        for key, e in b.items():
            de = e - a.get(key, 0)
            if de <= 0:
                continue
            addr = int(key[0], 16)
            ins = de * key[1]
            if addr >= KERNEL_BASE:
                part = "kernel"
                kfun[ksyms.of(addr)] += ins
            elif lo is not None and lo <= addr < hi:
                part = name
                gfun[syms.of(addr)] += ins
                if addr in syms.entry:
                    gcall[syms.entry[addr]] += de
            else:
                part = "other"
            parts[part] += ins
            drivers[(part, "blocks")] += de
            # the code passed through: blocks run at least once per 10 commands (their count and
            # their instructions), and the executions of blocks run 0.1-2 times per command
            if de * 10 >= cmds:
                # += cmds: driver_table divides every metric by the window's commands
                drivers[(part, "hot")] += cmds
                drivers[(part, "hotins")] += cmds * key[1]
                if de < 2 * cmds:
                    drivers[(part, "lukewarm")] += de
            if key in static:
                for metric, v in zip(("mem", "vec", "sys", "ind"), static[key]):
                    drivers[(part, metric)] += de * v
        out.append((label, cmds, parts, kfun, gfun, gcall, drivers))
    return out


def driver_table(ws, name, headings, metrics):
    """One row per window: each metric per command, in all and split kernel / name / other."""
    print("| window | %s |" % " | ".join(headings))
    print("|" + " --- |" * (len(headings) + 1))
    for label, cmds, _, _, _, _, dr in ws:
        cells = []
        for metric in metrics:
            v = [dr[(p, metric)] / cmds for p in ("kernel", name, "other")]
            cells.append("%.0f (%.0f / %.0f / %.0f)" % (sum(v), v[0], v[1], v[2]))
        print("| %s | %s |" % (label, " | ".join(cells)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="rdmablkd", help="the Go binary's file name in the guest")
    ap.add_argument("--ref", default="nvmet", help="the configuration the others are compared with")
    ap.add_argument("--base-binary", help="the baseline build's binary (BASELINE=REV), for the -base windows")
    ap.add_argument("dir")
    ap.add_argument("binary")
    o = ap.parse_args()
    ksyms = kernel_symbols(os.path.join(o.dir, "kallsyms"))
    gsyms = go_symbols(o.binary)
    ws = windows(o.dir, o.name, ksyms, gsyms, go_symbols(o.base_binary) if o.base_binary else None)
    print("| window | commands | instructions per command | kernel | %s code | other user code |" % o.name)
    print("| --- | --- | --- | --- | --- | --- |")
    for label, cmds, parts, _, _, _, _ in ws:
        t = sum(parts.values())
        print("| %s | %d | %.0f | %.0f | %.0f | %.0f |" % (label, cmds, t / cmds, parts["kernel"] / cmds,
                                                         parts[o.name] / cmds, parts["other"] / cmds))
    if any(w[6].get(("kernel", "mem")) for w in ws):
        print("\nWhat TCG charges beyond instructions, per command (all parts; kernel / %s / other user code):"
              " translated blocks run, memory accesses, SSE/AVX instructions, system instructions and lock"
              " prefixes, blocks that end in an indirect jump or return (insncount.c):\n" % o.name)
        driver_table(ws, o.name, ("blocks", "memory accesses", "vector", "system", "indirect exits"),
                     ("blocks", "mem", "vec", "sys", "ind"))
    print("\nThe code each window passed through (kernel / %s / other user code): translated blocks run at"
          " least once per 10 commands and their guest instructions (static: the code, not its executions),"
          " and the executions per command of those run 0.1–2 times per command (straight-line code run about"
          " once per command or per batch):\n" % o.name)
    driver_table(ws, o.name, ("blocks run ≥ 0.1 per command", "their instructions",
                              "executions of blocks run 0.1–2 per command"), ("hot", "hotins", "lukewarm"))
    # per (config, job): medians of the windows' totals, mean per-function counts
    groups = collections.defaultdict(list)
    for w in ws:
        cfg, job = w[0].split(".")[:2]
        groups[(cfg, job)].append(w)
    agg = {}
    for key, g in groups.items():
        kf, gf, gc = collections.Counter(), collections.Counter(), collections.Counter()
        for _, cmds, _, k, gg, calls, _ in g:
            for s, v in k.items():
                kf[s] += v / cmds / len(g)
            for s, v in gg.items():
                gf[s] += v / cmds / len(g)
            for s, v in calls.items():
                gc[s] += v / cmds / len(g)
        agg[key] = (statistics.median(sum(w[2].values()) / w[1] for w in g), kf, gf, gc)
    for (cfg, job) in sorted(agg):
        if cfg == o.ref or (o.ref, job) not in agg:
            continue
        r, n = agg[(cfg, job)], agg[(o.ref, job)]
        print("\n### %s %s: %.0f instructions per command, %s %.0f (%.2f×)\n" % (cfg, job, r[0], o.ref, n[0], r[0] / n[0]))
        print("Kernel functions, instructions per command (the 30 largest differences):\n")
        print("| function | %s | %s | difference |" % (cfg, o.ref))
        print("| --- | --- | --- | --- |")
        for s in sorted(set(r[1]) | set(n[1]), key=lambda s: -abs(r[1][s] - n[1][s]))[:30]:
            print("| `%s` | %.0f | %.0f | %+.0f |" % (s, r[1][s], n[1][s], r[1][s] - n[1][s]))
        if r[2] and n[2]:
            # both configurations run the binary (replperf: one copy against two): where it differs
            print("\n%s's own code, instructions per command (the 30 largest differences; %s %.0f, %s %.0f in all):\n"
                  % (o.name, cfg, sum(r[2].values()), o.ref, sum(n[2].values())))
            print("| function | %s | %s | difference |" % (cfg, o.ref))
            print("| --- | --- | --- | --- |")
            for s in sorted(set(r[2]) | set(n[2]), key=lambda s: -abs(r[2][s] - n[2][s]))[:30]:
                print("| `%s` | %.0f | %.0f | %+.0f |" % (s, r[2][s], n[2][s], r[2][s] - n[2][s]))
            # Calls per command (a function's entry block's executions; a
            # function inlined into its callers has none): how often the
            # poll loop, the CQ polls, cgo and the scheduler run per command.
            print("\n%s's functions, calls per command (the 20 largest differences):\n" % o.name)
            print("| function | %s | %s | difference |" % (cfg, o.ref))
            print("| --- | --- | --- | --- |")
            for s in sorted(set(r[3]) | set(n[3]), key=lambda s: -abs(r[3][s] - n[3][s]))[:20]:
                print("| `%s` | %.2f | %.2f | %+.2f |" % (s, r[3][s], n[3][s], r[3][s] - n[3][s]))
        elif r[2]:
            print("\n%s's own code with %s, instructions per command (the 25 largest):\n" % (o.name, cfg))
            print("| function | instructions |")
            print("| --- | --- |")
            for s, v in r[2].most_common(25):
                print("| `%s` | %.0f |" % (s, v))


if __name__ == "__main__":
    main()

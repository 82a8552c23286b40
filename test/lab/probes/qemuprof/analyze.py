#!/usr/bin/env python3
"""Split a host-wide perf recording (qemuprof/run.sh) of one lab guest's vCPU thread by fio job.

analyze.py PERF_DATA RUN_OUT_DIR QEMU_PIDS

A job's window is its fio JSON's modification time (written on the share when the job ends) minus
its elapsed wall time, trimmed by 1 s at each end; rounds of the same job are pooled (fio-perf.ours.null.rr1.r2
-> perf.ours.null.rr1). perf's timestamps are CLOCK_MONOTONIC (run.sh records with -k), mapped to
wall time with this boot's offset, so the analysis must run on the machine and boot that recorded.
Prints a Markdown table: the vCPU thread's busy share of each window, then per category the share
of its samples: translated guest code (JIT), QEMU functions by name (TB lookups: qht_lookup_custom;
softmmu TLB refills: tlb_set_page_full, x86_cpu_tlb_fill, helper_*_mmu; translation: tcg_gen_code,
tcg_optimize), QEMU code without a symbol, the host kernel by function.
"""
import collections
import glob
import json
import os
import re
import subprocess
import sys
import time

HZ = 999  # run.sh's perf record -F
TOP = 30


def windows(out_dir):
    off = time.time() - time.clock_gettime(time.CLOCK_MONOTONIC)
    wins = []
    for f in glob.glob(os.path.join(out_dir, 'fio-*.json')):
        try:
            with open(f) as fh:
                j = json.load(fh)
            # elapsed: the job's wall seconds (job_runtime sums a group's jobs)
            runtime = float(max(job.get('elapsed', 0) for job in j['jobs']))
        except (OSError, ValueError, KeyError):
            continue
        if runtime < 3:
            continue
        end = os.path.getmtime(f) - off
        label = re.sub(r'\.r\d+$', '', os.path.basename(f)[len('fio-'):-len('.json')])
        wins.append((end - runtime + 1.0, end - 1.0, label))
    return sorted(wins)


def category(sym, dso):
    if '/perf-' in dso or dso.startswith('perf-'):
        return 'JIT (translated guest code)'
    if 'kernel' in dso:
        return 'host kernel: ' + sym
    if 'qemu' in dso:
        return 'qemu: ' + (sym if sym != '[unknown]' else '[unresolved]')
    return os.path.basename(dso) + ': ' + sym


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    data, out_dir, pids = sys.argv[1:]
    wins = windows(out_dir)
    if not wins:
        sys.exit('analyze.py: no fio JSON of 3 s or more in ' + out_dir)
    text = subprocess.run(['perf', 'script', '-i', data, '--pid', pids, '-F', 'tid,comm,time,ip,sym,dso', '--ns'],
                          capture_output=True, text=True, check=True).stdout
    line_re = re.compile(r'\s*(.*?)\s+(\d+)\s+(\d+\.\d+):\s+[0-9a-f]+\s+(.*)\s+\((.*)\)\s*$')
    agg = collections.defaultdict(collections.Counter)
    tot = collections.Counter()
    span = collections.Counter()
    for a, b, label in wins:
        span[label] += b - a
    starts = [w[0] for w in wins]
    for line in text.splitlines():
        m = line_re.match(line)
        if not m or 'TCG' not in m.group(1):  # the vCPU thread: "CPU 0/TCG" or "ALL CPUs/TCG"
            continue
        t = float(m.group(3))
        # windows do not overlap: the last one starting before t
        lo, hi = 0, len(starts)
        while lo < hi:
            mid = (lo + hi) // 2
            if starts[mid] <= t:
                lo = mid + 1
            else:
                hi = mid
        if lo == 0 or t > wins[lo - 1][1]:
            continue
        label = wins[lo - 1][2]
        agg[label][category(m.group(4).strip(), m.group(5))] += 1
        tot[label] += 1
    keys = sorted(agg)
    if not keys:
        sys.exit('analyze.py: no vCPU samples inside the job windows (clock offset? another boot?)')
    print('| | ' + ' | '.join(keys) + ' |')
    print('| --- |' + ' --- |' * len(keys))
    print('| vCPU thread busy, % of the window | ' + ' | '.join('%.0f' % (100.0 * tot[k] / (span[k] * HZ)) for k in keys) + ' |')
    share = collections.Counter()
    for k in keys:
        for c, v in agg[k].items():
            share[c] += v / tot[k]
    for c, _ in share.most_common(TOP):
        print('| %s | ' % c + ' | '.join('%.1f' % (100.0 * agg[k][c] / tot[k]) for k in keys) + ' |')
    print('\nShares are %% of the vCPU thread\'s samples in each job\'s windows (%s samples in all).' % sum(tot.values()))


if __name__ == '__main__':
    main()

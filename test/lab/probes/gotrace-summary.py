#!/usr/bin/env python3
"""Scheduler events of the busiest goroutine in a Go execution trace, per second.

  go tool trace -d=parsed FILE.trace | test/lab/probes/gotrace-summary.py

FILE.trace: `rdmablk connect --trace` (the frontends scenario's lab.gotrace=R) or `rdmablkd
--trace`. The goroutine with the most state transitions is the poll loop (the ublk queue's or an
NBD connection's). Per second of the trace: its cgo and system calls (Running->Syscall), its
yields (runtime.Gosched: nbsys.Yielder, or after an idle sleep), the runtime's preemptions of it
(sysmon: 10 ms without a reschedule), and whether the second was busy (more than 50 calls) or
idle; then the totals per busy and per idle second. On a goroutine locked to its thread every
yield and every preemption hands the P to another thread and back.
"""
import collections
import re
import sys

EV = re.compile(r'StateTransition Time=(\d+) GoID=(\d+) (\w+)->(\w+) Reason="([^"]*)"')
events = []
count = collections.Counter()
for line in sys.stdin:
    if not line.startswith('M='):
        continue
    m = EV.search(line)
    if m:
        t, g, a, b, r = int(m.group(1)), m.group(2), m.group(3), m.group(4), m.group(5)
        events.append((t, g, a, b, r))
        count[g] += 1
if not events:
    sys.exit('no state transitions in the input (go tool trace -d=parsed FILE)')
g, n = count.most_common(1)[0]
t0 = events[0][0]
sec = collections.defaultdict(collections.Counter)
for t, eg, a, b, r in events:
    if eg != g:
        continue
    s = (t - t0) // 1_000_000_000
    if b == 'Syscall':
        sec[s]['calls'] += 1
    if r == 'runtime.Gosched':
        sec[s]['yields'] += 1
    if r == 'preempted':
        sec[s]['preempted'] += 1
print(f'goroutine {g} ({n} transitions)')
print('second calls yields preempted')
tot = {'busy': collections.Counter(), 'idle': collections.Counter()}
for s in range(max(sec) + 1):
    c = sec[s]
    kind = 'busy' if c['calls'] > 50 else 'idle'
    tot[kind]['seconds'] += 1
    for k in ('calls', 'yields', 'preempted'):
        tot[kind][k] += c[k]
    print(f"{s:6d} {c['calls']:5d} {c['yields']:6d} {c['preempted']:9d} {kind}")
for kind, c in tot.items():
    if c['seconds']:
        print(f"{kind}: {c['seconds']} s; per second: {c['calls'] / c['seconds']:.0f} calls, "
              f"{c['yields'] / c['seconds']:.1f} yields, {c['preempted'] / c['seconds']:.1f} preemptions")

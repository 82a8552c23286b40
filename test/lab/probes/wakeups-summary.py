#!/usr/bin/env python3
"""Summarise tcp-qd1-wakeups.sh output: events per command by (event, woken task, waker, stack).

    test/lab/probes/wakeups-summary.py OUTDIR [LABEL...]
"""
import collections, re, sys

SKIP = re.compile(r'^(ttwu|try_to_wake_up|wake_up|__wake_up|autoremove_wake|default_wake|pollwake|'
                  r'ep_poll_callback|__queue_work|queue_work|kick_pool|insert_work|__call_rcu|swake_up|'
                  r'__swake|wake_up_process|complete$|rcu_gp_kthread_wake|__note_gp_changes|note_gp_changes)')

def norm(name):
    return re.sub(r'\d+', 'N', name)

def events(path):
    ev = None
    for line in open(path, errors='replace'):
        if not line.strip():
            if ev: yield ev
            ev = None
            continue
        if not line[0].isspace():
            if ev: yield ev
            m = re.match(r'\s*(.+?)\s+(\d+)\s+(\S+):\s*(.*)', line)
            if not m:
                ev = None; continue
            comm, _, event, trace = m.groups()
            woken = ''
            w = re.search(r'comm=(\S+)', trace)
            if w: woken = norm(w.group(1))
            ev = [event.replace('sched:sched_', '').replace('probe:', 'rcu:'), woken, norm(comm), []]
        elif ev is not None:
            parts = line.split()
            if len(parts) >= 2:
                ev[3].append(re.sub(r'\+0x[0-9a-f]+$', '', parts[1]))
    if ev: yield ev

def main():
    out = sys.argv[1]
    labels = sys.argv[2:] or ['rdmablkd', 'nvmet-tcp']
    for label in labels:
        ios = int(open(f'{out}/{label}.ios').read())
        byk = collections.Counter()
        for event, woken, comm, stack in events(f'{out}/{label}.script.txt'):
            frames = [f for f in stack if not SKIP.match(f)][:6]
            byk[(event, woken, comm, ';'.join(frames))] += 1
        print(f'== {label}: {ios} commands; per command: event woken <waker> waker stack (top)')
        tot = collections.Counter()
        for (event, woken, comm, st), n in byk.items():
            tot[(event, woken)] += n
        for (event, woken), n in tot.most_common(12):
            print(f'  {n / ios:6.3f} {event} {woken}')
        print('  -- by stack')
        for (event, woken, comm, st), n in byk.most_common(25):
            print(f'  {n / ios:6.3f} {event} {woken} <{comm}> {st}')

main()

// Package threadsched sets the Linux scheduling policy of every thread of
// the process, for the attachment process (rdmablk connect, rdmablk serve):
// Apply("batch") puts its threads in SCHED_BATCH.
//
// Why: an attachment's I/O threads (a ublk queue thread, an NBD
// connection's poll loop, the initiator's queue goroutines) are woken by
// the task that issued the I/O — fio's submission, the kernel's block
// layer queueing to ublk or to the nbd socket. Under SCHED_OTHER the woken
// thread may preempt that task at once (wakeup preemption), so on a guest
// with few vCPUs a burst of 32 submissions turns into a switch to our
// thread and back per request. A SCHED_BATCH thread never preempts on
// wake-up: the submitter finishes its burst, then our thread takes it in
// one go. Its share of the CPU is unchanged (same nice level, same
// fairness); only that wake-up decision differs, so a latency-bound load
// (QD1: the submitter blocks right after submitting) is not delayed. In two
// lab A/B runs (frontends 2026-12-04-2219 and -2237, 1-vCPU initiator
// guest, each same boot, 5 interleaved rounds) it cut the guest's context
// switches per I/O by a fifth and raised ublk 4 KiB randwrite from 0.92×
// to 0.97× and from 0.86× to 0.88× of the kernel host.
//
// Ownership: Apply changes process-wide state (every thread's policy;
// threads started later inherit it from the thread that creates them) and
// starts no goroutine. Changing between SCHED_OTHER and SCHED_BATCH needs
// no privilege.
package threadsched

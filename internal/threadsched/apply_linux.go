package threadsched

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Apply sets policy on every thread of the process. Threads the runtime
// starts while Apply runs are caught by its next pass: it repeats until a
// pass finds every thread already set (a thread created later inherits
// the policy of the thread that creates it, which is then set).
func Apply(policy string) error {
	if err := Check(policy); err != nil {
		return err
	}
	if policy == Normal {
		return nil
	}
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_BATCH}
	for range 100 {
		changed, err := setAll(&attr)
		if err != nil || !changed {
			return err
		}
	}
	return nil
}

// setAll sets attr on each thread not yet under its policy and reports
// whether it changed any.
func setAll(attr *unix.SchedAttr) (bool, error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return false, fmt.Errorf("scheduling policy: %w", err)
	}
	changed := false
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		cur, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			continue // the thread ended
		}
		if cur.Policy == attr.Policy {
			continue
		}
		if err := unix.SchedSetAttr(tid, attr, 0); err != nil {
			if err == unix.ESRCH {
				continue
			}
			return false, fmt.Errorf("scheduling policy batch on thread %d: %w", tid, err)
		}
		changed = true
	}
	return changed, nil
}

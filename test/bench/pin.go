package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// cpuSet is the CPUs a child process may run on; nil: unpinned.
type cpuSet []int

func (c cpuSet) String() string {
	if c == nil {
		return "any CPU"
	}
	s := make([]string, len(c))
	for i, n := range c {
		s[i] = strconv.Itoa(n)
	}
	return "CPU " + strings.Join(s, ",")
}

// startPinned starts cmd confined to cpus (sched_setaffinity, 2), or
// plainly when cpus is nil. The child is forked from an OS thread of this
// process that was given the mask first, so it inherits it from its first
// instruction on — and so does every thread it ever creates, which
// setting the mask of a running Go process (one thread at a time, while
// its runtime starts more) could not promise. The locked thread is
// discarded afterwards (its goroutine exits without unlocking), so no
// other goroutine of the harness runs with the mask. GOMAXPROCS is set to
// the number of CPUs in the child's environment.
func startPinned(cmd *exec.Cmd, cpus cpuSet) error {
	if cpus == nil {
		return cmd.Start()
	}
	if cmd.Env == nil {
		cmd.Env = cmd.Environ()
	}
	cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(len(cpus)))
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread ends with this goroutine.
		var set unix.CPUSet
		for _, c := range cpus {
			set.Set(c)
		}
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			errc <- fmt.Errorf("sched_setaffinity %s: %w", cpus, err)
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}

// checkPinned verifies that every thread of process pid runs on cpus
// exactly (the mask is inherited, so this holds unless something changed
// it) and returns how many threads it checked.
func checkPinned(pid int, cpus cpuSet) (int, error) {
	if cpus == nil {
		return 0, nil
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	want := cpus.String()
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &set); err != nil {
			continue // the thread has exited
		}
		var got cpuSet
		for c := range 1024 {
			if set.IsSet(c) {
				got = append(got, c)
			}
		}
		if got.String() != want {
			return 0, fmt.Errorf("thread %d of process %d runs on %s, want %s", tid, pid, got, want)
		}
	}
	return len(tasks), nil
}

package testproc

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Daemon is a command run as a child process whose stderr is its log (one
// JSON object a line). It can be started again after it exited or was
// killed; the log accumulates over all runs.
type Daemon struct {
	// Name prefixes failure messages and mirrored lines; New sets it to
	// the executable's base name.
	Name string
	// Path is the executable.
	Path string
	// Env, if not nil, is appended to os.Environ() for the process.
	Env []string
	// Mirror, if not nil, receives every log line as "[Name] line\n" as
	// it is read (for watching a test live).
	Mirror io.Writer

	t testing.TB

	mu      sync.Mutex
	log     bytes.Buffer
	recs    []Record
	changed chan struct{} // closed and replaced when a line arrives
	cur     *run
}

// run is one start of the process.
type run struct {
	cmd    *exec.Cmd
	first  int           // index in recs of this run's first line
	exited chan struct{} // closed after the log is read to EOF and cmd.Wait returned
	err    error         // cmd.Wait's result, valid once exited is closed
}

// New returns a Daemon for the executable path, not yet started, and
// registers a cleanup with t that kills the process if it is still running
// and, if t failed, logs everything the process wrote.
func New(t testing.TB, path string) *Daemon {
	d := &Daemon{Name: filepath.Base(path), Path: path, t: t, changed: make(chan struct{})}
	t.Cleanup(func() {
		d.Kill()
		if t.Failed() {
			t.Logf("%s log:\n%s", d.Name, d.Log())
		}
	})
	return d
}

// Start runs the executable with args. It does not wait for anything; use
// WaitLog for a ready line. Start fails the test if the process cannot be
// started or a previous run is still going.
func (d *Daemon) Start(args ...string) {
	d.t.Helper()
	if r := d.running(); r != nil {
		d.t.Fatalf("%s: start while running", d.Name)
	}
	cmd := exec.Command(d.Path, args...)
	if d.Env != nil {
		cmd.Env = append(os.Environ(), d.Env...)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		d.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.mu.Lock()
	r := &run{cmd: cmd, first: len(d.recs), exited: make(chan struct{})}
	d.cur = r
	d.mu.Unlock()
	go d.read(r, stderr)
}

// read keeps the log of run r until EOF, then reaps the process.
func (d *Daemon) read(r *run, stderr io.Reader) {
	sc := bufio.NewScanner(stderr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if d.Mirror != nil {
			fmt.Fprintf(d.Mirror, "[%s] %s\n", d.Name, line)
		}
		rec := parseRecord(line)
		d.mu.Lock()
		d.log.Write(line)
		d.log.WriteByte('\n')
		d.recs = append(d.recs, rec)
		close(d.changed)
		d.changed = make(chan struct{})
		d.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, stderr) // a line too long for the scanner: do not block the child
	r.err = r.cmd.Wait()
	close(r.exited)
}

// running returns the current run if its process has not exited.
func (d *Daemon) running() *run {
	d.mu.Lock()
	r := d.cur
	d.mu.Unlock()
	if r == nil {
		return nil
	}
	select {
	case <-r.exited:
		return nil
	default:
		return r
	}
}

// started returns the current run, failing the test if there is none.
func (d *Daemon) started(caller string) *run {
	d.t.Helper()
	d.mu.Lock()
	r := d.cur
	d.mu.Unlock()
	if r == nil {
		d.t.Fatalf("%s: %s before Start", d.Name, caller)
	}
	return r
}

// Log returns everything the process wrote to stderr so far, over all
// runs. Safe for concurrent use.
func (d *Daemon) Log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.String()
}

// WaitLog waits up to timeout for a line of the current run whose "msg" is
// msg and which satisfies every predicate in and, and returns the first
// such line. It fails the test if the process exits or the timeout passes
// first.
func (d *Daemon) WaitLog(msg string, timeout time.Duration, and ...func(Record) bool) Record {
	d.t.Helper()
	r := d.started("WaitLog")
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	match := func(rec Record) bool {
		return rec.Msg() == msg && !slices.ContainsFunc(and, func(p func(Record) bool) bool { return !p(rec) })
	}
	next := r.first
	for {
		d.mu.Lock()
		recs, changed := d.recs[next:], d.changed
		next = len(d.recs)
		d.mu.Unlock()
		if i := slices.IndexFunc(recs, match); i >= 0 {
			return recs[i]
		}
		select {
		case <-changed:
		case <-r.exited:
			// Every line was read before exited was closed.
			d.mu.Lock()
			recs = d.recs[next:]
			d.mu.Unlock()
			if i := slices.IndexFunc(recs, match); i >= 0 {
				return recs[i]
			}
			d.t.Fatalf("%s exited before %q: %v\n%s", d.Name, msg, r.err, d.Log())
		case <-timer.C:
			d.t.Fatalf("%s: no %q after %v\n%s", d.Name, msg, timeout, d.Log())
		}
	}
}

// LogContains reports whether the log (all runs) contains s.
func (d *Daemon) LogContains(s string) bool { return strings.Contains(d.Log(), s) }

// Signal sends sig to the current run's process. It returns an error if the
// daemon was never started or the signal cannot be delivered (for example
// because the process was already reaped).
func (d *Daemon) Signal(sig syscall.Signal) error {
	d.mu.Lock()
	r := d.cur
	d.mu.Unlock()
	if r == nil {
		return fmt.Errorf("%s: not started", d.Name)
	}
	return r.cmd.Process.Signal(sig)
}

// Kill sends SIGKILL to a running process and waits for it to exit. It
// does nothing if the daemon was never started or has already exited.
func (d *Daemon) Kill() {
	r := d.running()
	if r == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.exited
}

// Wait waits up to timeout for the current run's process to exit and
// returns its exit error (nil for status 0). It fails the test if the
// daemon was never started or is still running after timeout.
func (d *Daemon) Wait(timeout time.Duration) error {
	d.t.Helper()
	r := d.started("Wait")
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-r.exited:
		return r.err
	case <-timer.C:
		d.t.Fatalf("%s did not exit within %v\n%s", d.Name, timeout, d.Log())
		return nil
	}
}

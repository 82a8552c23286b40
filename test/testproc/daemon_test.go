package testproc

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestHelperProcess is the child of TestDaemon: it logs a ready line,
// waits for SIGTERM and logs a goodbye. It does nothing in a normal run.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("TESTPROC_HELPER") == "" {
		return
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fmt.Fprintln(os.Stderr, "not json")
	fmt.Fprintf(os.Stderr, `{"msg":"ready","run":%q}`+"\n", os.Getenv("TESTPROC_HELPER"))
	<-term
	fmt.Fprintln(os.Stderr, `{"msg":"bye"}`)
	os.Exit(0)
}

func TestDaemon(t *testing.T) {
	d := New(t, os.Args[0])
	d.Env = []string{"TESTPROC_HELPER=1"}
	d.Start("-test.run=^TestHelperProcess$")
	if got := d.WaitLog("ready", time.Minute).Str("run"); got != "1" {
		t.Fatalf("run %q, want 1", got)
	}
	if err := d.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.Wait(time.Minute); err != nil {
		t.Fatal(err)
	}
	if !d.LogContains(`{"msg":"bye"}`) || !d.LogContains("not json") {
		t.Fatalf("log:\n%s", d.Log())
	}

	// A second run: WaitLog sees only its lines, the log keeps both.
	d.Env = []string{"TESTPROC_HELPER=2"}
	d.Start("-test.run=^TestHelperProcess$")
	if got := d.WaitLog("ready", time.Minute).Str("run"); got != "2" {
		t.Fatalf("run %q, want 2", got)
	}
	d.Kill()
	if err := d.Wait(time.Minute); err == nil {
		t.Fatal("killed process exited with status 0")
	}
	d.Kill() // no-op once exited
	if err := d.Signal(syscall.SIGTERM); err == nil {
		t.Fatal("signal to a reaped process succeeded")
	}
}

func TestBuildGoBinaryCached(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build")
	}
	const p = "github.com/rdmablk/rdmablk/cmd/rdmablk"
	a := BuildGoBinary(t, p)
	if b := BuildGoBinary(t, p); a != b {
		t.Fatalf("second build %s, first %s", b, a)
	}
	if _, err := os.Stat(a); err != nil {
		t.Fatal(err)
	}
}

// TestFreePort: the ports are loopback, outside the kernel's ephemeral
// range (which a :0 listener or a connect could take meanwhile), and
// reserved: a second call, while the first port is held, gets another.
func TestFreePort(t *testing.T) {
	lo, hi := reservedRange()
	seen := map[string]bool{}
	for range 20 {
		a := FreePort(t)
		host, port, err := net.SplitHostPort(a)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("FreePort: %q %v", a, err)
		}
		n, _ := strconv.Atoi(port)
		if n < lo || n >= hi {
			t.Fatalf("FreePort: port %d outside %d-%d", n, lo, hi-1)
		}
		if seen[a] {
			t.Fatalf("FreePort handed out %s twice while it was reserved", a)
		}
		seen[a] = true
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, p, _ := net.SplitHostPort(l.Addr().String()); p != "" {
		if n, _ := strconv.Atoi(p); n >= lo && n < hi {
			t.Fatalf("the kernel's :0 port %d lies in FreePort's range %d-%d", n, lo, hi-1)
		}
	}
}

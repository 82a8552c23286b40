package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/internal/syncbuf"
)

// bin is the rdmablkd executable TestMain builds once for every test.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rdmablkd-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bin = filepath.Join(dir, "rdmablkd")
	gobin := "go"
	if r := os.Getenv("GOROOT"); r != "" {
		gobin = filepath.Join(r, "bin", "go")
	}
	if out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build rdmablkd: %v\n%s", err, out)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runResult is one finished run of the binary.
type runResult struct {
	code           int
	stdout, stderr string
}

// runDaemon runs rdmablkd with args and env (appended to the test's
// environment) in dir, expecting it to exit by itself within 20 s; a
// daemon that came up instead is killed and the test fails.
func runDaemon(t *testing.T, dir string, env []string, args ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("rdmablkd %v did not exit (it should have refused to start):\n%s", args, se.String())
	}
	res := runResult{stdout: so.String(), stderr: se.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return res
}

// errorLines are the lines of stderr that are not log records: what
// main printed as the error.
func errorLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if l != "" && !strings.HasPrefix(l, "time=") {
			out = append(out, l)
		}
	}
	return out
}

func writeFile(t *testing.T, path, s string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStartupErrors drives each start-up failure through the real binary:
// one clear line naming the cause and the setting, exit status 1, no panic
// or stack trace, nothing on stdout.
func TestStartupErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() }) // after the parallel subtests
	cases := []struct {
		name  string
		files map[string]string // written in the run's directory
		env   []string
		args  []string
		want  []string // each error line must contain the matching entry
	}{
		{name: "ListenAddressInUse", args: []string{"-l", busy.Addr().String()},
			want: []string{`listeners[0].addr "` + busy.Addr().String() + `" (--listen): address already in use`}},
		{name: "DataDirNotCreatable", files: map[string]string{"afile": "x"}, args: []string{"--data-dir", "afile/data"},
			want: []string{`data_dir "afile/data" (--data-dir): mkdir: not a directory`}},
		{name: "VolumeInMissingDirectory",
			files: map[string]string{"c.yaml": "volumes:\n  - {name: a, path: a.img, size: 1M}\n  - {name: b, path: /nonexistent-dir/b.img, size: 1M}\nsubsystems: []\n"},
			args:  []string{"-c", "c.yaml"},
			want:  []string{`volumes[1] "b": path "/nonexistent-dir/b.img": open: no such file or directory`}},
		{name: "ProviderIbverbsNotBuiltIn", args: []string{"--provider", "ibverbs"},
			want: []string{`transport.provider "ibverbs" (--provider): this rdmablkd was built without it (go build -tags ibverbs`}},
		{name: "UnknownProvider", args: []string{"--provider", "magic"},
			want: []string{`transport.provider "magic" (--provider): want auto, soft or ibverbs`}},
		{name: "UnknownProfile", args: []string{"--profile", "foo"},
			want: []string{`transport.profile "foo" (--profile): want default or pvrdma`}},
		{name: "ListenNotAnAddress", args: []string{"-l", "foo"},
			want: []string{`listeners[0].addr "foo" (--listen): "foo" is not an IP address`}},
		{name: "ListenPortOutOfRange", args: []string{"-l", "127.0.0.1:70000"},
			want: []string{`listeners[0].addr "127.0.0.1:70000" (--listen): port "70000": want a number from 1 to 65535 (0: any free port)`}},
		{name: "LogLevel", args: []string{"--log-level", "loud"},
			want: []string{`log.level "loud" (--log-level): want debug, info, warn or error`}},
		{name: "TransportAndTargetOutOfRange",
			files: map[string]string{"c.yaml": "transport:\n  in_capsule_data_size: 17\n  max_data_transfer: 100\n  max_queue_depth: 1\ntarget:\n  workers: -1\n  max_io_queues: 70000\n"},
			args:  []string{"-c", "c.yaml"},
			want: []string{"transport.in_capsule_data_size 17:", "transport.max_data_transfer 100:", "transport.max_queue_depth 1:",
				"target.workers -1:", "target.max_io_queues 70000:"}},
		{name: "QueueDepthTooLarge", env: []string{"RDMABLKD_TRANSPORT_MAX_QUEUE_DEPTH=65536"},
			want: []string{"transport.max_queue_depth 65536: want 2 to 65535"}},
		{name: "ConfigFileMissing", args: []string{"-c", "nope.yaml"},
			want: []string{"config: open nope.yaml: no such file or directory"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, body := range tc.files {
				writeFile(t, filepath.Join(dir, name), body)
			}
			args := append([]string{"--metrics-listen", "127.0.0.1:0"}, tc.args...)
			if !strings.Contains(strings.Join(tc.args, " "), "-l ") && !strings.Contains(strings.Join(tc.args, " "), "--listen") {
				args = append(args, "-l", "127.0.0.1:0")
			}
			checkRefused(t, runDaemon(t, dir, tc.env, args...), tc.want)
		})
	}
}

// checkRefused asserts exit status 1, exactly len(want) error lines each
// prefixed "rdmablkd: " and containing its want, and no panic.
func checkRefused(t *testing.T, r runResult, want []string) {
	t.Helper()
	if r.code != 1 {
		t.Errorf("exit status %d, want 1", r.code)
	}
	if r.stdout != "" {
		t.Errorf("stdout %q, want nothing", r.stdout)
	}
	for _, bad := range []string{"panic", "goroutine ", "SIGSEGV"} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("stderr contains %q:\n%s", bad, r.stderr)
		}
	}
	lines := errorLines(r.stderr)
	if len(lines) != len(want) {
		t.Fatalf("%d error lines, want %d:\n%s", len(lines), len(want), r.stderr)
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, "rdmablkd: ") || !strings.Contains(l, want[i]) {
			t.Errorf("error line %q, want \"rdmablkd: …%s…\"", l, want[i])
		}
	}
}

// TestUnknownKeysRejected: typo'd keys and values that do not parse, in
// the file and in the environment, are refused naming the file and line
// or the variable, the key and the nearest key; --print-config does not
// echo them.
func TestUnknownKeysRejected(t *testing.T) {
	cases := []struct {
		name, file string
		env        []string
		want       []string
	}{
		{name: "Listners", file: "listners:\n  - addr: 127.0.0.1:4420\n",
			want: []string{`c.yaml:1: unknown key "listners" (did you mean "listeners"?)`}},
		{name: "Levle", file: "log:\n  levle: debug\n",
			want: []string{`c.yaml:2: unknown key "log.levle" (did you mean "log.level"?)`}},
		{name: "Queus", file: "transport:\n  queus: 8\n",
			want: []string{`c.yaml:2: unknown key "transport.queus" (did you mean "transport.max_queue_depth"?)`}},
		{name: "InAList", file: "volumes:\n  - name: a\n    path: a.img\n    szie: 1M\n",
			want: []string{`c.yaml:4: unknown key "volumes[0].szie" (did you mean "volumes[0].size"?)`}},
		{name: "Several", file: "listners: []\ncluster:\n  enabeld: true\n",
			want: []string{`c.yaml:1: unknown key "listners"`, `c.yaml:3: unknown key "cluster.enabeld" (did you mean "cluster.enabled"?)`}},
		{name: "ValueNotAnInteger", file: "transport:\n  max_queue_depth: abc\n",
			want: []string{`c.yaml:2: transport.max_queue_depth: "abc" wants an integer`}},
		{name: "DurationWithoutUnit", file: "cluster:\n  resync: 30\n",
			want: []string{`c.yaml:2: cluster.resync: "30" wants a duration with a unit, such as 500ms, 30s or 5m`}},
		{name: "EnvUnknown", env: []string{"RDMABLKD_LOG_LEVLE=debug"},
			want: []string{"environment: unknown variable RDMABLKD_LOG_LEVLE (did you mean RDMABLKD_LOG_LEVEL?)"}},
		{name: "EnvNotAnInteger", env: []string{"RDMABLKD_TARGET_WORKERS=many"},
			want: []string{`environment: RDMABLKD_TARGET_WORKERS="many": target.workers wants an integer`}},
		{name: "EnvNotABool", env: []string{"RDMABLKD_CLUSTER_ENABLED=yes please"},
			want: []string{`environment: RDMABLKD_CLUSTER_ENABLED="yes please": cluster.enabled wants true or false`}},
		{name: "EnvNotADuration", env: []string{"RDMABLKD_CLUSTER_RESYNC=30"},
			want: []string{`environment: RDMABLKD_CLUSTER_RESYNC="30": cluster.resync wants a duration`}},
		{name: "EnvListOfEntries", env: []string{"RDMABLKD_VOLUMES=a.img"},
			want: []string{"environment: RDMABLKD_VOLUMES: volumes is a list of entries that the environment cannot express; set it in a config file (--config)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := []string{"-l", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}
			if tc.file != "" {
				writeFile(t, filepath.Join(dir, "c.yaml"), tc.file)
				args = append(args, "-c", "c.yaml")
			}
			checkRefused(t, runDaemon(t, dir, tc.env, args...), tc.want)
			checkRefused(t, runDaemon(t, dir, tc.env, append(args, "--print-config")...), tc.want)
		})
	}
}

// TestListenersFromEnvironment: RDMABLKD_LISTENERS sets the list (commas
// or spaces), --listen wins over it.
func TestListenersFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	env := []string{"RDMABLKD_LISTENERS=127.0.0.1:4501, 127.0.0.1:4502"}
	r := runDaemon(t, dir, env, "--print-config")
	if r.code != 0 || !strings.Contains(r.stdout, "addr: 127.0.0.1:4501") || !strings.Contains(r.stdout, "addr: 127.0.0.1:4502") {
		t.Fatalf("status %d, config:\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runDaemon(t, dir, env, "--print-config", "-l", "127.0.0.1:4503")
	if r.code != 0 || strings.Contains(r.stdout, "4501") || !strings.Contains(r.stdout, "addr: 127.0.0.1:4503") {
		t.Fatalf("--listen did not win: status %d, config:\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runDaemon(t, dir, []string{"RDMABLKD_METRICS_LISTEN="}, "--print-config")
	if r.code != 0 || !strings.Contains(r.stdout, "metrics:\n    listen: \"\"") {
		t.Fatalf("RDMABLKD_METRICS_LISTEN= did not turn metrics off: status %d, config:\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestVersion(t *testing.T) {
	r := runDaemon(t, t.TempDir(), nil, "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "rdmablkd version ") || !strings.Contains(r.stdout, " commit ") ||
		!strings.Contains(r.stdout, " go1.") {
		t.Fatalf("status %d, stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestReadyNotifyMetricsAndStop runs the daemon as systemd would with
// Type=notify: it must send READY=1 once listening, serve /metrics with
// rdmablk_build_info, send STOPPING=1 on SIGTERM and exit 0.
func TestReadyNotifyMetricsAndStop(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cmd := exec.Command(bin, "-l", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--log-level", "debug")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock)
	var se syncbuf.Buffer
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	recv := func() string {
		t.Helper()
		buf := make([]byte, 4096)
		if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
			t.Fatal(err)
		}
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("no sd_notify message: %v\n%s", err, se.String())
		}
		return string(buf[:n])
	}
	ready := recv()
	if !strings.HasPrefix(ready, "READY=1\n") {
		t.Fatalf("first notification %q, want READY=1", ready)
	}
	// STATUS= names the listeners and the metrics endpoint.
	_, addr, ok := strings.Cut(ready, "; metrics on http://")
	addr = strings.TrimSuffix(addr, "/metrics")
	if !ok || !strings.Contains(ready, "STATUS=serving NVMe-oF/RDMA on 127.0.0.1:") {
		t.Fatalf("READY notification %q lacks the listeners or the metrics address", ready)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"rdmablk_build_info{", "rdmablk_target_commands_total ", "go_goroutines "} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if m := recv(); !strings.HasPrefix(m, "STOPPING=1") {
		t.Fatalf("notification %q, want STOPPING=1", m)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, se.String())
	}
	if !strings.Contains(se.String(), `msg="file descriptor limit`) {
		t.Errorf("file descriptor limit not logged:\n%s", se.String())
	}
}

// TestFileLimitRaisedAndLogged: started with a soft RLIMIT_NOFILE below
// the hard one, the daemon runs with soft = hard and logs both.
func TestFileLimitRaisedAndLogged(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("no prlimit")
	}
	cmd, se := startReady(t, t.TempDir(), prlimit, "--nofile=256:4096", bin, "-l", "127.0.0.1:0", "--metrics-listen", "", "--log-level", "info")
	if l := se.String(); !strings.Contains(l, `msg="file descriptor limit`) || !strings.Contains(l, "soft=4096 ") || !strings.Contains(l, "hard=4096") {
		t.Errorf("log does not show the soft limit raised to the hard limit 4096:\n%s", se.String())
	}
	stopClean(t, cmd, se)
}

// TestPrintConfigRedactsSecrets: --print-config shows DH-HMAC-CHAP
// secrets as <redacted>, never their value.
func TestPrintConfigRedactsSecrets(t *testing.T) {
	dir := t.TempDir()
	const secret = "DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:"
	writeFile(t, filepath.Join(dir, "c.yaml"), "subsystems:\n  - nqn: nqn.2026-11.io.rdmablk:vol0\n    hosts:\n"+
		"      - nqn: nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000001\n"+
		"        dhchap_secret: \""+secret+"\"\n    namespaces:\n      - {nsid: 1, volume: vol0}\n")
	r := runDaemon(t, dir, nil, "-c", "c.yaml", "--print-config")
	if r.code != 0 || !strings.Contains(r.stdout, "dhchap_secret: <redacted>") || strings.Contains(r.stdout+r.stderr, secret[10:40]) {
		t.Fatalf("status %d, config:\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestDumpStacks: the SIGUSR1 dump writes a file naming this test's own
// goroutine.
func TestDumpStacks(t *testing.T) {
	dir := t.TempDir()
	path, err := dumpStacks(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir || !strings.Contains(string(b), "TestDumpStacks") {
		t.Fatalf("%s does not hold this goroutine's stack:\n%.500s", path, b)
	}
}

// TestSIGUSR1DumpsStacks: the running daemon answers SIGUSR1 with a file
// of every goroutine's stack in its data_dir, named in the log, and goes
// on serving (then stops cleanly on SIGINT).
func TestSIGUSR1DumpsStacks(t *testing.T) {
	dir := t.TempDir()
	cmd, se := startReady(t, dir, bin, "-l", "127.0.0.1:0", "--metrics-listen", "", "--log-level", "info", "--data-dir", dir)
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	waitLog(t, se, `msg="goroutine stacks written (SIGUSR1)"`)
	files, _ := filepath.Glob(filepath.Join(dir, "rdmablkd-*-stacks-*.txt"))
	if len(files) != 1 || !strings.Contains(se.String(), "file="+files[0]) {
		t.Fatalf("stack files %v; log:\n%s", files, se.String())
	}
	if b, err := os.ReadFile(files[0]); err != nil || !strings.Contains(string(b), "main.run") {
		t.Fatalf("%s: %v; does not hold the daemon's main goroutine:\n%.400s", files[0], err, b)
	}
	stopClean(t, cmd, se)
}

// startReady runs name args in dir (the daemon, or a wrapper that execs
// it), its stderr collected, and waits for "rdmablkd ready"; the process
// is killed when the test ends, if it still runs.
func startReady(t *testing.T, dir, name string, args ...string) (*exec.Cmd, *syncbuf.Buffer) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	se := &syncbuf.Buffer{}
	cmd.Stderr = se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	waitLog(t, se, "rdmablkd ready")
	return cmd, se
}

// stopClean interrupts the daemon and fails unless it exits with status 0.
func stopClean(t *testing.T, cmd *exec.Cmd, se *syncbuf.Buffer) {
	t.Helper()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, se.String())
	}
}

// waitLog polls the daemon's log until it holds what (30 s at most).
func waitLog(t *testing.T, log *syncbuf.Buffer, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(log.String(), what) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log:\n%s", what, log.String())
		}
		time.Sleep(20 * time.Millisecond) // polling the log, not synchronising on time
	}
}

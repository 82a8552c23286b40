package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

const benchNQN = "nqn.2026-11.io.rdmablk:bench"

// ioJob is one fio job and its `rdmablk bench` twin.
type ioJob struct {
	name    string
	fioRW   string // fio rw=
	pattern string // rdmablk bench --pattern
	rw      string // rdmablk bench --rw
	bs      int
	qd      int
	jobs    int // rdmablk bench --jobs (0: 1); fio runs one job
}

var ioJobs = []ioJob{
	{name: "4 KiB randread QD32", fioRW: "randread", pattern: "rand", rw: "read", bs: 4096, qd: 32},
	{name: "4 KiB randwrite QD32", fioRW: "randwrite", pattern: "rand", rw: "write", bs: 4096, qd: 32},
	{name: "128 KiB seqread QD8", fioRW: "read", pattern: "seq", rw: "read", bs: 128 << 10, qd: 8},
}

// ioRun is the outcome of one run of one side.
type ioRun struct {
	iops    float64
	bytes   float64 // bytes moved
	cpuInit float64 // CPU s of the load generator (fio, rdmablk bench)
	cpuTgt  float64 // CPU s of rdmablkd (ours only)
	cpuPeer float64 // CPU s of the second rdmablkd (replicated rows only)
}

// runIO prepares the data file, starts rdmablkd on it, measures memory,
// then runs every job repeats times, fio and ours alternating.
func runIO(ctx context.Context, o *options, work string, rep *report) error {
	data := filepath.Join(work, "data.img")
	logf("writing the %d MiB data file %s", o.size>>20, data)
	if err := writeDataFile(data, o.size); err != nil {
		return err
	}
	d, err := startDaemon(ctx, o, work, data)
	if err != nil {
		return err
	}
	defer d.stop()
	if err := measureMemory(ctx, d, o, rep); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	for _, j := range ioJobs {
		res := ioResult{job: j}
		for i := range o.repeats {
			logf("%s: repeat %d/%d: fio", j.name, i+1, o.repeats)
			f, err := runFio(ctx, o, data, j)
			if err != nil {
				return err
			}
			// the NVMe/TCP twin (tcp.go) runs after the soft RDMA run in odd
			// repeats, before it in even ones
			if err := runTCPRow(ctx, o, d, &res, i%2 == 1); err != nil {
				return err
			}
			logf("%s: repeat %d/%d: rdmablk bench", j.name, i+1, o.repeats)
			r, err := runOurs(ctx, o, d, j)
			if err != nil {
				return err
			}
			if err := runTCPRow(ctx, o, d, &res, i%2 == 0); err != nil {
				return err
			}
			res.fio = append(res.fio, f)
			res.ours = append(res.ours, r)
		}
		rep.io = append(rep.io, res)
	}
	return nil
}

// writeDataFile writes size bytes of non-zero data (so neither side reads
// holes) and syncs it.
func writeDataFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	buf := make([]byte, 4<<20)
	for i := range buf {
		buf[i] = byte(i*131 + i>>12)
	}
	for off := int64(0); off < size; off += int64(len(buf)) {
		n := min(int64(len(buf)), size-off)
		if _, err := f.Write(buf[:n]); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// daemon is a running rdmablkd.
type daemon struct {
	cmd  *exec.Cmd
	addr string
	log  string
	// tcpAddr is its NVMe/TCP listener ("" without one: tcp.go).
	tcpAddr string
}

func startDaemon(ctx context.Context, o *options, work, data string) (*daemon, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	tcpAddr, tcpListener, err := tcpListenerConfig(o)
	if err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`log:
  level: warn
transport:
  provider: soft
  profile: default
listeners:%s
  - addr: %s
volumes:
  - name: bench
    path: %s
    size: %dM
    block_size: 4096
subsystems:
  - nqn: %s
    serial: bench0001
    allow_any_host: true
    namespaces:
      - nsid: 1
        volume: bench
`, tcpListener, addr, data, o.size>>20, benchNQN)
	d, err := startDaemonConfig(ctx, o, work, "rdmablkd", addr, cfg)
	if d != nil {
		d.tcpAddr = tcpAddr
	}
	return d, err
}

// startDaemonConfig starts rdmablkd with config cfg (files named name.*
// in work) and waits until its listener addr accepts.
func startDaemonConfig(ctx context.Context, o *options, work, name, addr, cfg string) (*daemon, error) {
	return startDaemonOn(ctx, o, work, name, addr, cfg, nil)
}

// startDaemonOn is startDaemonConfig with the daemon confined to cpus
// (startPinned; nil: unpinned) and extra command-line arguments.
func startDaemonOn(ctx context.Context, o *options, work, name, addr, cfg string, cpus cpuSet, extra ...string) (*daemon, error) {
	cfgPath := filepath.Join(work, name+".yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(work, name+".log")
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(o.binDir, "rdmablkd"), append([]string{"--config", cfgPath}, extra...)...)
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := startPinned(cmd, cpus); err != nil {
		lf.Close()
		return nil, err
	}
	lf.Close()
	d := &daemon{cmd: cmd, addr: addr, log: logPath}
	// Ready when the soft provider's TCP listener accepts.
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			d.stop()
			b, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("rdmablkd did not listen on %s: %v\n%s", addr, err, b)
		}
		time.Sleep(50 * time.Millisecond) // polling an external process, not test synchronisation
	}
	return d, nil
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

func (d *daemon) stop() {
	_ = d.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = d.cmd.Process.Kill()
		<-done
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// runFio runs one fio job (io_uring, O_DIRECT) on the data file.
func runFio(ctx context.Context, o *options, data string, j ioJob) (ioRun, error) {
	args := []string{
		"--name=bench", "--filename=" + data, "--ioengine=io_uring", "--direct=1",
		"--rw=" + j.fioRW, "--bs=" + strconv.Itoa(j.bs), "--iodepth=" + strconv.Itoa(j.qd),
		"--numjobs=1", "--time_based", "--runtime=" + strconv.Itoa(int(o.runtime.Seconds())) + "s",
		"--size=" + strconv.FormatInt(o.size, 10), "--norandommap", "--randrepeat=0",
		"--output-format=json",
	}
	cmd := exec.CommandContext(ctx, "fio", args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return ioRun{}, fmt.Errorf("fio: %v\n%s", err, errb.String())
	}
	var v struct {
		Jobs []struct {
			Read  fioDir `json:"read"`
			Write fioDir `json:"write"`
		} `json:"jobs"`
	}
	// fio may print notes before the JSON.
	b := out.Bytes()
	if i := bytes.IndexByte(b, '{'); i > 0 {
		b = b[i:]
	}
	if err := json.Unmarshal(b, &v); err != nil || len(v.Jobs) == 0 {
		return ioRun{}, fmt.Errorf("fio output: %v\n%s", err, out.String())
	}
	jr := v.Jobs[0]
	return ioRun{
		iops:    jr.Read.IOPS + jr.Write.IOPS,
		bytes:   float64(jr.Read.IOBytes + jr.Write.IOBytes),
		cpuInit: rusageCPU(cmd.ProcessState),
	}, nil
}

type fioDir struct {
	IOPS    float64 `json:"iops"`
	IOBytes int64   `json:"io_bytes"`
}

// runOurs runs `rdmablk bench` against the daemon and charges the daemon's
// CPU time during the run to the target.
func runOurs(ctx context.Context, o *options, d *daemon, j ioJob) (ioRun, error) {
	return runOursNQN(ctx, o, d, j, benchNQN)
}

// runOursNQN is runOurs against subsystem nqn.
func runOursNQN(ctx context.Context, o *options, d *daemon, j ioJob, nqn string) (ioRun, error) {
	return runBench(ctx, o, d, j, "--traddr", d.addr, "--nqn", nqn, "--provider", "soft")
}

// runBench runs `rdmablk bench` for job j with the connection flags conn
// (address, subsystem, transport) and charges the daemon's CPU time
// during the run to the target.
func runBench(ctx context.Context, o *options, d *daemon, j ioJob, conn ...string) (ioRun, error) {
	args := append([]string{"bench"}, conn...)
	args = append(args,
		"--pattern", j.pattern, "--rw", j.rw, "--bs", strconv.Itoa(j.bs), "--qd", strconv.Itoa(j.qd),
		"--jobs", strconv.Itoa(max(j.jobs, 1)), "--runtime", o.runtime.String(), "--size", strconv.FormatInt(o.size, 10),
		"--json", "--quiet",
	)
	cmd := exec.CommandContext(ctx, filepath.Join(o.binDir, "rdmablk"), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	before, err := procCPU(d.pid())
	if err != nil {
		return ioRun{}, err
	}
	err = startPinned(cmd, o.genCPUs)
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		return ioRun{}, fmt.Errorf("rdmablk bench: %v\n%s%s", err, out.String(), errb.String())
	}
	after, err := procCPU(d.pid())
	if err != nil {
		return ioRun{}, err
	}
	var v struct {
		IOs    float64 `json:"ios"`
		IOPS   float64 `json:"iops"`
		Errors int64   `json:"errors"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		return ioRun{}, fmt.Errorf("rdmablk bench output: %v\n%s", err, out.String())
	}
	if v.Errors > 0 {
		return ioRun{}, fmt.Errorf("rdmablk bench: %d I/O errors", v.Errors)
	}
	return ioRun{
		iops:    v.IOPS,
		bytes:   v.IOs * float64(j.bs),
		cpuInit: rusageCPU(cmd.ProcessState),
		cpuTgt:  after - before,
	}, nil
}

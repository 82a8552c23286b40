package attach

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/internal/nbsys"
	"github.com/rdmablk/rdmablk/nbd"
	"github.com/rdmablk/rdmablk/ublk"
)

// PathStatus is one path in a Status.
type PathStatus struct {
	Addr      string `json:"addr"`
	State     string `json:"state"`
	ANA       string `json:"ana"`
	CNTLID    uint16 `json:"cntlid"`
	Queues    int    `json:"queues"`
	Connects  int    `json:"connects"`
	Preferred bool   `json:"preferred"`
	LastError string `json:"last_error,omitempty"`
}

// Status is what GET /status returns.
type Status struct {
	Name      string       `json:"name"`
	NQN       string       `json:"nqn"`
	NSID      uint32       `json:"nsid"`
	PID       int          `json:"pid"`
	Socket    string       `json:"socket"`
	TCP       string       `json:"tcp,omitempty"`
	Device    string       `json:"device,omitempty"`
	Size      int64        `json:"size"`
	BlockSize int          `json:"block_size"`
	Paths     []PathStatus `json:"paths"`
	// Frontend is how the namespace reaches the block layer ("ublk" or
	// "nbd"), FrontendNote why that one.
	Frontend     string `json:"frontend"`
	FrontendNote string `json:"frontend_note,omitempty"`
	// DeviceNote says why there is no kernel device (Device empty).
	DeviceNote string `json:"device_note,omitempty"`
	// Queues and QueueDepth of the current path's controller; NBDConns
	// counts the kernel's connections too (one per I/O queue).
	Queues      int     `json:"queues"`
	QueueDepth  int     `json:"queue_depth"`
	InFlight    int64   `json:"in_flight"`
	Replays     uint64  `json:"replays"`
	Requests    uint64  `json:"requests"`
	IOPS        float64 `json:"iops"` // requests completed per second over the last second
	NBDConns    int64   `json:"nbd_conns"`
	NBDRequests uint64  `json:"nbd_requests"`
	// UblkRequests and UblkErrors count the ublk device's requests
	// (completed; completed with an error).
	UblkRequests uint64    `json:"ublk_requests,omitempty"`
	UblkErrors   uint64    `json:"ublk_errors,omitempty"`
	Started      time.Time `json:"started"`
}

// Attachment is a running attachment.
type Attachment struct {
	cfg     Config
	runDir  string
	log     *slog.Logger
	started time.Time

	sess   *initiator.Session
	srv    *nbd.Server
	kdev   *nbd.KernelDevice
	udev   *ublk.Device // the ublk frontend's device (nil for nbd)
	ctl    *http.Server
	ctlLn  net.Listener
	serveW sync.WaitGroup

	frontend, frontendNote string
	deviceNote             string // why there is no kernel device

	iopsMu   sync.Mutex // guards iops and the last sample
	iops     float64
	lastReq  uint64
	lastTime time.Time

	registered bool // the state file is ours (written by writeState)

	stopOnce sync.Once
	stopped  chan struct{} // closed when Stop finished
	request  chan struct{} // closed on a disconnect request
	reqOnce  sync.Once
}

// An attachment's controllers use the initiator's queue shape unless the
// Config sets one: min(initiator.DefaultIOQueues, GOMAXPROCS) queues of
// initiator.DefaultQueueDepth. Every NBD connection's requests share all
// queues (the session's submission layer multiplexes them), so a few deep
// queues serve any number of requests in flight.

// Start opens the session (waiting for a first path within
// opts.ConnectTimeout), serves the NBD export, attaches the kernel device
// per cfg.Device and registers the attachment in runDir. opts carries the
// provider and per-controller options; cfg's fields override them.
func Start(ctx context.Context, cfg Config, opts initiator.Options, runDir string) (*Attachment, error) {
	if err := cfg.Validate(runDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.IOQueues, opts.QueueDepth = 0, 0 // the initiator's defaults
	if cfg.Queues > 0 {
		opts.IOQueues = cfg.Queues
	}
	if cfg.QueueDepth > 0 {
		opts.QueueDepth = cfg.QueueDepth
	}
	if cfg.HostNQN != "" {
		opts.HostNQN = cfg.HostNQN
	}
	host, ctrl, err := cfg.secrets()
	if err != nil {
		return nil, err
	}
	if host != nil {
		opts.DHCHAPSecret = host
	}
	if ctrl != nil {
		opts.DHCHAPCtrlSecret = ctrl
	}
	if err := setNetNS(&opts, cfg.NetNS); err != nil {
		return nil, err
	}
	// A state file left by a process that died without Stop (kill -9)
	// names the ublk device to recover; a live process owns the name.
	var prev *state
	if st, err := readState(filepath.Join(runDir, cfg.Name+".json")); err == nil {
		if st.PID != os.Getpid() && pidAlive(st.PID) {
			return nil, fmt.Errorf("attach: attachment %s is already running (pid %d)", cfg.Name, st.PID)
		}
		prev = &st
	}
	frontend, why, err := chooseFrontend(cfg.Frontend, hostProbe)
	if err != nil {
		return nil, err
	}
	if cfg.Device == "none" {
		frontend, why = FrontendNBD, "no kernel device requested (--device none)"
	}
	a := &Attachment{cfg: cfg, frontend: frontend, frontendNote: why, runDir: runDir, log: opts.Logger.With("attachment", cfg.Name), started: time.Now(),
		stopped: make(chan struct{}), request: make(chan struct{})}
	sess, err := initiator.OpenSession(ctx, initiator.SessionOptions{
		Options: opts, SubNQN: cfg.NQN, Paths: cfg.Paths, NSID: cfg.NSID,
		ReconnectDelay: cfg.ReconnectDelay, CtrlLossTimeout: cfg.CtrlLossTimeout,
	})
	if err != nil {
		return nil, err
	}
	a.sess = sess
	fail := func(err error) (*Attachment, error) {
		a.teardown()
		return nil, err
	}
	a.srv, err = nbd.NewServer(nbd.Options{Logger: a.log, Exports: []*nbd.Export{{
		Name: cfg.Name, Description: cfg.NQN, Backend: newNBDBackend(sess),
	}}})
	if err != nil {
		return fail(err)
	}
	_ = os.Remove(cfg.Socket)
	ul, err := net.Listen("unix", cfg.Socket)
	if err != nil {
		return fail(fmt.Errorf("attach: NBD socket: %w", err))
	}
	a.serve(ul)
	if cfg.TCP != "" {
		tl, err := net.Listen("tcp", cfg.TCP)
		if err != nil {
			return fail(fmt.Errorf("attach: NBD TCP listener: %w", err))
		}
		a.cfg.TCP = tl.Addr().String()
		a.serve(tl)
	}
	a.log.Info("frontend", "frontend", frontend, "why", why)
	switch {
	case frontend == FrontendUblk:
		if err := a.startUblk(prev); err != nil {
			return fail(err)
		}
	case cfg.Device == "none":
		a.deviceNote = "no kernel device requested (--device none)"
	default:
		if prev != nil && prev.Ublk {
			a.log.Warn("the previous run left a ublk device; this run uses nbd", "device", fmt.Sprintf("/dev/ublkb%d", prev.UblkID))
		}
		dev := cfg.Device
		if dev == "auto" {
			dev = ""
		}
		// One NBD connection per I/O queue (NBD_FLAG_CAN_MULTI_CONN).
		conns := max(1, sess.Stats().Queues)
		nbsys.ReserveP(conns) // each connection's poll loop (nbd/loop_linux.go)
		k, err := a.srv.AttachKernel(dev, cfg.Name, cfg.IOTimeout, conns)
		switch {
		case err == nil:
			a.kdev = k
			a.log.Info("attached kernel device", "device", k.Path)
		case errors.Is(err, nbd.ErrNoDevice) && cfg.Device == "auto":
			a.deviceNote = noDeviceNote(err, cfg)
			a.log.Info("no kernel nbd device; serving NBD clients only", "why", a.deviceNote, "socket", cfg.Socket)
		default:
			return fail(err)
		}
	}
	if err := a.startControl(); err != nil {
		return fail(err)
	}
	if err := a.writeState(); err != nil {
		return fail(err)
	}
	a.lastTime = time.Now()
	go a.sampleIOPS()
	a.log.Info("attachment ready", "nqn", cfg.NQN, "paths", cfg.Paths, "socket", cfg.Socket, "size", sess.Size())
	return a, nil
}

func (a *Attachment) serve(l net.Listener) {
	a.serveW.Add(1)
	go func() {
		defer a.serveW.Done()
		_ = a.srv.Serve(l)
	}()
}

// Name is the attachment's name.
func (a *Attachment) Name() string { return a.cfg.Name }

// Session is the attachment's initiator session.
func (a *Attachment) Session() *initiator.Session { return a.sess }

// Disconnected is closed when a disconnect was requested over the
// control socket (the owner then calls Stop).
func (a *Attachment) Disconnected() <-chan struct{} { return a.request }

// Status reports the attachment's state.
func (a *Attachment) Status() Status {
	ss := a.sess.Stats()
	a.iopsMu.Lock()
	iops := a.iops
	a.iopsMu.Unlock()
	st := Status{
		Name: a.cfg.Name, NQN: a.cfg.NQN, NSID: a.sess.NSID(), PID: os.Getpid(), Socket: a.cfg.Socket, TCP: a.cfg.TCP,
		Size: a.sess.Size(), BlockSize: a.sess.BlockSize(), Frontend: a.frontend, FrontendNote: a.frontendNote, DeviceNote: a.deviceNote,
		Queues: ss.Queues, QueueDepth: ss.QueueDepth, InFlight: ss.InFlight, Replays: ss.Replays,
		Requests: ss.Requests, IOPS: iops, Started: a.started,
	}
	if a.kdev != nil {
		st.Device = a.kdev.Path
	}
	if a.udev != nil {
		st.Device = a.udev.Path()
		us := a.udev.Stats()
		st.UblkRequests, st.UblkErrors = us.Requests, us.Errors
	}
	ns := a.srv.Stats()
	st.NBDConns, st.NBDRequests = ns.Conns, ns.Requests
	for _, p := range a.sess.Paths() {
		st.Paths = append(st.Paths, PathStatus{Addr: p.Addr, State: p.State.String(), ANA: p.ANA.String(),
			CNTLID: p.CNTLID, Queues: p.Queues, Connects: p.Connects, Preferred: p.Preferred, LastError: p.LastError})
	}
	return st
}

// sampleIOPS updates the IOPS figure once a second until Stop.
func (a *Attachment) sampleIOPS() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-a.stopped:
			return
		case now := <-t.C:
			req := a.sess.Stats().Requests
			a.iopsMu.Lock()
			if d := now.Sub(a.lastTime).Seconds(); d > 0 {
				a.iops = float64(req-a.lastReq) / d
			}
			a.lastReq, a.lastTime = req, now
			a.iopsMu.Unlock()
		}
	}
}

// noDeviceNote explains a missing /dev/nbdX and what to do instead.
func noDeviceNote(err error, cfg Config) string {
	why := "no free /dev/nbdX"
	if _, serr := os.Stat("/sys/module/nbd"); serr != nil {
		why = "the nbd kernel module is not loaded (modprobe nbd)"
	} else if os.Geteuid() != 0 {
		why = "attaching /dev/nbdX needs root (CAP_SYS_ADMIN)"
	}
	return fmt.Sprintf("%s; the export still serves NBD clients: nbd-client -unix %s /dev/nbd0 -N %s (%v)",
		why, cfg.Socket, cfg.Name, err)
}

// Stop detaches the kernel device (the kernel flushes first), stops the
// NBD server (in-flight requests finish), closes the session and
// unregisters the attachment. It is idempotent.
func (a *Attachment) Stop() error {
	a.stopOnce.Do(func() {
		a.teardown()
		close(a.stopped)
	})
	return nil
}

func (a *Attachment) teardown() {
	if a.registered {
		_ = os.Remove(a.statePath())
	}
	if a.udev != nil {
		// STOP_DEV (I/O in flight completes) and delete: disconnect
		// ends the device; only a crash leaves it for recovery.
		if err := a.udev.Stop(); err != nil {
			a.log.Warn("stop ublk device", "device", a.udev.Path(), "err", err)
		}
	}
	if a.kdev != nil {
		if err := a.kdev.Detach(30 * time.Second); err != nil {
			a.log.Warn("detach kernel device", "err", err)
		}
	}
	if a.srv != nil {
		a.srv.Close()
		a.serveW.Wait()
	}
	if a.sess != nil {
		if err := a.sess.Flush(); err != nil && !errors.Is(err, initiator.ErrControllerLost) {
			a.log.Warn("final flush", "err", err)
		}
		a.sess.Close()
	}
	_ = os.Remove(a.cfg.Socket)
	if a.ctl != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = a.ctl.Shutdown(ctx)
		cancel()
	}
	_ = os.Remove(a.ctlPath())
}

func (a *Attachment) statePath() string { return filepath.Join(a.runDir, a.cfg.Name+".json") }
func (a *Attachment) ctlPath() string   { return filepath.Join(a.runDir, a.cfg.Name+".ctl") }

// pidAlive reports whether process pid exists.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// state is the registration file's content.
type state struct {
	Name    string `json:"name"`
	PID     int    `json:"pid"`
	Control string `json:"control"`
	Socket  string `json:"socket"`
	// Ublk and UblkID: the attachment serves /dev/ublkb<UblkID>; a
	// restart after a crash recovers that device.
	Ublk   bool   `json:"ublk,omitempty"`
	UblkID uint32 `json:"ublk_id,omitempty"`
}

func (a *Attachment) writeState() error {
	st := state{Name: a.cfg.Name, PID: os.Getpid(), Control: a.ctlPath(), Socket: a.cfg.Socket}
	if a.udev != nil {
		st.Ublk, st.UblkID = true, a.udev.ID()
	}
	b, _ := json.Marshal(st)
	tmp := a.statePath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, a.statePath()); err != nil {
		return err
	}
	a.registered = true
	return nil
}

func (a *Attachment) startControl() error {
	p := a.ctlPath()
	_ = os.Remove(p)
	l, err := net.Listen("unix", p)
	if err != nil {
		return fmt.Errorf("attach: control socket: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(a.Status())
	})
	mux.HandleFunc("POST /disconnect", func(w http.ResponseWriter, _ *http.Request) {
		a.reqOnce.Do(func() { close(a.request) })
		w.WriteHeader(http.StatusAccepted)
	})
	a.ctl = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	a.ctlLn = l
	go func() { _ = a.ctl.Serve(l) }()
	return nil
}

package soft_test

import (
	"context"
	"errors"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitN waits for n completions on cq.
func waitN(t *testing.T, ctx context.Context, cq verbs.CompletionQueue, n int) []verbs.WorkCompletion {
	t.Helper()
	out := make([]verbs.WorkCompletion, 0, n)
	wc := make([]verbs.WorkCompletion, n)
	for len(out) < n {
		k, err := cq.Poll(wc[:n-len(out)])
		if err != nil {
			t.Fatalf("Poll: %v", err)
		}
		out = append(out, wc[:k]...)
		if k > 0 || len(out) == n {
			continue
		}
		if err := verbs.Wait(ctx, cq); err != nil {
			t.Fatalf("waiting for %d completions, have %+v: %v", n, out, err)
		}
	}
	return out
}

func wantStatuses(t *testing.T, wcs []verbs.WorkCompletion, want ...verbs.WCStatus) {
	t.Helper()
	if len(wcs) != len(want) {
		t.Fatalf("%d completions %+v, want %d", len(wcs), wcs, len(want))
	}
	for i := range want {
		if wcs[i].Status != want[i] {
			t.Fatalf("completion %d status %v, want %v (all %+v)", i, wcs[i].Status, want[i], wcs)
		}
	}
}

func waitDone(t *testing.T, ctx context.Context, id verbs.ConnID) {
	t.Helper()
	select {
	case <-id.Done():
	case <-ctx.Done():
		t.Fatalf("Done not closed")
	}
}

var smallCap = verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 2, MaxRecvSGE: 2}

func sgeOf(mr verbs.MemoryRegion, off, n int) []verbs.SGE {
	return []verbs.SGE{{Addr: mr.Addr() + uint64(off), Length: uint32(n), LKey: mr.LKey()}}
}

const rw = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead

func TestCutLink(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		t.Run(map[bool]string{false: "Fabric", true: "TCP"}[tcp], func(t *testing.T) {
			ctx := testCtx(t)
			c, s := connectPair(t, tcp, soft.ProfileDefault, smallCap, fullDepth, fullDepth)
			_ = s
			mc := c.reg(t, make([]byte, 4096), verbs.AccessLocalWrite)
			// A SEND without a receive stays outstanding (RNR, retried
			// forever) until the cable is pulled.
			if _, err := c.qp.PostSend([]verbs.SendWR{
				{ID: 1, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: sgeOf(mc, 0, 8)},
				{ID: 2, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: sgeOf(mc, 0, 8)},
			}); err != nil {
				t.Fatal(err)
			}
			if err := soft.AwaitRNR(ctx, c.qp, 1); err != nil {
				t.Fatal(err)
			}
			if _, err := c.qp.PostRecv([]verbs.RecvWR{{ID: 9, SGL: sgeOf(mc, 100, 8)}}); err != nil {
				t.Fatal(err)
			}
			if err := soft.CutLink(c.id); err != nil {
				t.Fatalf("CutLink: %v", err)
			}
			waitDone(t, ctx, c.id)
			waitDone(t, ctx, s.id)
			for _, id := range []verbs.ConnID{c.id, s.id} {
				if !errors.Is(id.Err(), verbs.ErrDisconnected) {
					t.Fatalf("Err after cable pull: %v", id.Err())
				}
			}
			wcs := waitN(t, ctx, c.scq, 2)
			if wcs[0].ID != 1 || wcs[1].ID != 2 {
				t.Fatalf("completions after cable pull: %+v", wcs)
			}
			wantStatuses(t, wcs, verbs.WCRetryExcErr, verbs.WCWRFlushErr)
			wantStatuses(t, waitN(t, ctx, c.rcq, 1), verbs.WCWRFlushErr)
			if err := soft.CutLink(c.id); err == nil {
				t.Fatalf("CutLink on a dead link succeeded")
			}
		})
	}
}

func TestIRDEnforced(t *testing.T) {
	// The client's device serves one READ at a time; the server, accepting
	// with a larger initiator depth than the client offered, breaks it.
	ctx := testCtx(t)
	fab := soft.NewFabric()
	sp := soft.New(soft.Options{Fabric: fab})
	cp := soft.New(soft.Options{Fabric: fab, Tune: func(a *verbs.DeviceAttr) { a.MaxQPRdAtom = 1 }})
	t.Cleanup(func() { cp.Close(); sp.Close() })
	ln, err := sp.Listen("ird:1", verbs.ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cid, err := cp.Resolve(ctx, ln.Addr(), verbs.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := newEndpoint(t, cid, smallCap)
	errc := make(chan error, 1)
	go func() {
		_, err := cid.Connect(ctx, verbs.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RNRRetryCount: 7})
		errc <- err
	}()
	req, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if req.Param.InitiatorDepth != 1 {
		t.Fatalf("request offers initiator depth %d", req.Param.InitiatorDepth)
	}
	s := newEndpoint(t, req.ID, smallCap)
	if err := req.ID.Accept(ctx, verbs.ConnParam{ResponderResources: 1, InitiatorDepth: 8, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if st, _ := soft.Stats(c.qp); st.IRD != 1 {
		t.Fatalf("client IRD %d, want 1", st.IRD)
	}
	if st, _ := soft.Stats(s.qp); st.ORD != 8 {
		t.Fatalf("server ORD %d, want 8", st.ORD)
	}
	src := c.reg(t, make([]byte, 1<<20), rw)
	dst := s.reg(t, make([]byte, 1<<20), verbs.AccessLocalWrite)
	var wrs []verbs.SendWR
	for i := 0; i < 4; i++ {
		wrs = append(wrs, verbs.SendWR{ID: uint64(i), Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled,
			SGL: sgeOf(dst, i<<18, 1<<18), RemoteAddr: src.Addr() + uint64(i<<18), RKey: src.RKey()})
	}
	if _, err := s.qp.PostSend(wrs); err != nil {
		t.Fatal(err)
	}
	wcs := waitN(t, ctx, s.scq, 4)
	bad := -1
	for i, wc := range wcs {
		if wc.Status != verbs.WCSuccess {
			bad = i
			break
		}
	}
	if bad < 0 || wcs[bad].Status != verbs.WCRemInvReqErr {
		t.Fatalf("READs beyond the responder's IRD: %+v, want a WCRemInvReqErr", wcs)
	}
	for _, wc := range wcs[bad+1:] {
		if wc.Status != verbs.WCWRFlushErr {
			t.Fatalf("after the error: %+v", wcs)
		}
	}
}

func TestORDZeroFailsRead(t *testing.T) {
	ctx := testCtx(t)
	ap := verbs.ConnParam{ResponderResources: 0, InitiatorDepth: 0, RNRRetryCount: 7}
	c, s := connectPair(t, false, soft.ProfileDefault, smallCap, fullDepth, ap)
	src := s.reg(t, make([]byte, 4096), rw)
	dst := c.reg(t, make([]byte, 4096), verbs.AccessLocalWrite)
	if _, err := c.qp.PostSend([]verbs.SendWR{{ID: 1, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled,
		SGL: sgeOf(dst, 0, 8), RemoteAddr: src.Addr(), RKey: src.RKey()}}); err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, waitN(t, ctx, c.scq, 1), verbs.WCLocQPOpErr)
}

func TestUnsignaledWRsHoldSlots(t *testing.T) {
	ctx := testCtx(t)
	c, s := connectPair(t, false, soft.ProfileDefault, verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}, fullDepth, fullDepth)
	src := c.reg(t, make([]byte, 4096), 0)
	dst := s.reg(t, make([]byte, 4096), rw)
	w := verbs.SendWR{Opcode: verbs.OpRDMAWrite, SGL: sgeOf(src, 0, 8), RemoteAddr: dst.Addr(), RKey: dst.RKey()}
	four := []verbs.SendWR{w, w, w, w}
	four[3].Flags = verbs.SendSignaled
	four[3].ID = 3
	if n, err := c.qp.PostSend(four); n != 4 || err != nil {
		t.Fatalf("PostSend: %d %v", n, err)
	}
	wantStatuses(t, waitN(t, ctx, c.scq, 1), verbs.WCSuccess)
	// The signaled completion freed all four slots.
	unsignaled := []verbs.SendWR{w, w, w, w, w}
	if n, err := c.qp.PostSend(unsignaled); n != 4 || !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("5 unsignaled into 4 slots: %d, %v", n, err)
	}
	// Without a signaled completion the slots stay taken, however long the
	// responder has acknowledged them.
	if n, err := c.qp.PostSend(four[3:]); n != 0 || !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("post into a queue full of unsignaled WRs: %d, %v", n, err)
	}
}

func TestSendWithInvBadRKey(t *testing.T) {
	ctx := testCtx(t)
	c, s := connectPair(t, false, soft.ProfileDefault, smallCap, fullDepth, fullDepth)
	mc := c.reg(t, make([]byte, 4096), verbs.AccessLocalWrite)
	other := c.reg(t, make([]byte, 4096), rw)
	ms := s.reg(t, make([]byte, 4096), 0)
	if _, err := c.qp.PostRecv([]verbs.RecvWR{{ID: 1, SGL: sgeOf(mc, 0, 64)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.qp.PostSend([]verbs.SendWR{{ID: 2, Opcode: verbs.OpSendWithInv, Flags: verbs.SendSignaled,
		SGL: sgeOf(ms, 0, 8), InvalidateRKey: other.RKey() ^ 1}}); err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, waitN(t, ctx, s.scq, 1), verbs.WCRemInvReqErr)
	wantStatuses(t, waitN(t, ctx, c.rcq, 1), verbs.WCRemInvReqErr)
}

func TestReceiveWithBadSGE(t *testing.T) {
	ctx := testCtx(t)
	c, s := connectPair(t, false, soft.ProfileDefault, smallCap, fullDepth, fullDepth)
	mc := c.reg(t, make([]byte, 4096), 0)
	ro := s.reg(t, make([]byte, 4096), verbs.AccessRemoteRead) // no local write
	if _, err := s.qp.PostRecv([]verbs.RecvWR{{ID: 1, SGL: sgeOf(ro, 0, 64)}, {ID: 2, SGL: sgeOf(ro, 0, 64)}}); err != nil {
		t.Fatalf("PostRecv with a read-only SGE is accepted (checked on use): %v", err)
	}
	if _, err := c.qp.PostSend([]verbs.SendWR{{ID: 3, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: sgeOf(mc, 0, 8)}}); err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, waitN(t, ctx, c.scq, 1), verbs.WCRemOpErr)
	wantStatuses(t, waitN(t, ctx, s.rcq, 2), verbs.WCLocProtErr, verbs.WCWRFlushErr)
}

func TestProviderCloseRemovesDevice(t *testing.T) {
	base := runtime.NumGoroutine()
	ctx := testCtx(t)
	fab := soft.NewFabric()
	sp := soft.New(soft.Options{Fabric: fab})
	cp := soft.New(soft.Options{Fabric: fab})
	ln, err := sp.Listen("gone:1", verbs.ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cid, err := cp.Resolve(ctx, ln.Addr(), verbs.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := newEndpoint(t, cid, smallCap)
	errc := make(chan error, 1)
	go func() { _, err := cid.Connect(ctx, fullDepth); errc <- err }()
	req, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := newEndpoint(t, req.ID, smallCap)
	if err := req.ID.Accept(ctx, fullDepth); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	mc := c.reg(t, make([]byte, 4096), verbs.AccessLocalWrite)
	if _, err := c.qp.PostRecv([]verbs.RecvWR{{ID: 1, SGL: sgeOf(mc, 0, 8)}}); err != nil {
		t.Fatal(err)
	}
	sp.Close()
	if !errors.Is(s.id.Err(), verbs.ErrDeviceRemoved) {
		t.Fatalf("server ID Err after device removal: %v", s.id.Err())
	}
	waitDone(t, ctx, c.id)
	if !errors.Is(c.id.Err(), verbs.ErrDisconnected) {
		t.Fatalf("client Err: %v", c.id.Err())
	}
	wantStatuses(t, waitN(t, ctx, c.rcq, 1), verbs.WCWRFlushErr)
	if _, err := sp.Devices(); !errors.Is(err, verbs.ErrNoDevice) {
		t.Fatalf("Devices after Close: %v", err)
	}
	if _, err := sp.Listen("gone:2", verbs.ListenOptions{}); err == nil {
		t.Fatalf("Listen after Close succeeded")
	}
	if _, err := s.id.Device().AllocPD(); !errors.Is(err, verbs.ErrDeviceRemoved) {
		t.Fatalf("AllocPD after Close: %v", err)
	}
	c.id.Close()
	cp.Close()
	sp.Close() // idempotent
	// Every goroutine of both providers is gone once Close returns.
	checkGoroutines(t, base)
}

func TestProfiles(t *testing.T) {
	for _, name := range []string{"default", "pvrdma"} {
		p, err := soft.ProfileByName(name)
		if err != nil || p.Name != name {
			t.Fatalf("ProfileByName(%q): %+v, %v", name, p, err)
		}
	}
	if _, err := soft.ProfileByName("mlx5"); !errors.Is(err, verbs.ErrInvalid) {
		t.Fatalf("unknown profile: %v", err)
	}
	a := soft.ProfilePVRDMA.Attr
	if a.VendorID != 0x15ad || a.VendorPartID != 0x0820 || a.FWVersion != "3.0.000" || a.MaxQPWR != 1024 ||
		a.MaxSGE != 16 || a.MaxSGERd != 16 || a.MaxCQ != 4096 || a.MaxCQE != 262144 || a.MaxMR != 262144 ||
		a.MaxInlineData != 0 || a.MaxSRQ != 0 || a.NumCompVectors != 1 || a.MaxQPRdAtom != 16 || a.MaxQPInitRdAtom != 16 ||
		a.Caps != verbs.CapMemMgtExtensions|verbs.CapRNRNakGen {
		t.Fatalf("pvrdma profile %+v", a)
	}
	p := soft.New(soft.Options{Profile: soft.ProfilePVRDMA, Tune: func(a *verbs.DeviceAttr) { a.MaxQPRdAtom = 1 }})
	defer p.Close()
	devs, err := p.Devices()
	if err != nil || len(devs) != 1 || devs[0].Name() != "vmw_pvrdma0" || devs[0].Attr().MaxQPRdAtom != 1 || p.Name() != "soft" {
		t.Fatalf("tuned pvrdma device: %v %v", devs, err)
	}
	if soft.New(soft.Options{}).Name() != "soft" {
		t.Fatalf("zero options")
	}
}

func TestPVRDMAMemoryRegionLimit(t *testing.T) {
	const gib = 1 << 30
	m, err := syscall.Mmap(-1, 0, gib+8192, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE|syscall.MAP_NORESERVE)
	if err != nil {
		t.Skipf("cannot reserve 1 GiB of address space: %v", err)
	}
	defer syscall.Munmap(m)
	for _, prof := range []soft.Profile{soft.ProfilePVRDMA, soft.ProfileDefault} {
		p := soft.New(soft.Options{Profile: prof})
		defer p.Close()
		devs, _ := p.Devices()
		pd, err := devs[0].AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		limited := prof.Name == "pvrdma"
		for _, c := range []struct {
			name  string
			buf   []byte
			fails bool
		}{
			{"1GiB", m[:gib], false},
			{"1GiB+4KiB", m[:gib+4096], limited},
			{"1GiB unaligned", m[1 : gib+1], limited}, // spans 262,145 pages
		} {
			mr, err := pd.RegisterMemory(c.buf, verbs.AccessLocalWrite)
			if c.fails {
				if !errors.Is(err, verbs.ErrInvalid) {
					t.Fatalf("%s: %s registration: %v, want ErrInvalid", prof.Name, c.name, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %s registration: %v", prof.Name, c.name, err)
			}
			mr.Close()
		}
		pd.Close()
	}
}

func TestNotSoftObjects(t *testing.T) {
	if err := soft.InjectQPError(nil); !errors.Is(err, verbs.ErrInvalid) {
		t.Fatalf("InjectQPError(nil): %v", err)
	}
	if err := soft.CutLink(nil); !errors.Is(err, verbs.ErrInvalid) {
		t.Fatalf("CutLink(nil): %v", err)
	}
	if _, err := soft.Stats(nil); !errors.Is(err, verbs.ErrInvalid) {
		t.Fatalf("Stats(nil): %v", err)
	}
	if err := soft.AwaitRNR(context.Background(), nil, 1); !errors.Is(err, verbs.ErrInvalid) {
		t.Fatalf("AwaitRNR(nil): %v", err)
	}
}

func TestConnectCancelled(t *testing.T) {
	fab := soft.NewFabric()
	sp := soft.New(soft.Options{Fabric: fab})
	cp := soft.New(soft.Options{Fabric: fab})
	t.Cleanup(func() { cp.Close(); sp.Close() })
	ln, err := sp.Listen("slow:1", verbs.ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cid, err := cp.Resolve(ctx, ln.Addr(), verbs.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	newEndpoint(t, cid, smallCap)
	errc := make(chan error, 1)
	go func() { _, err := cid.Connect(ctx, fullDepth); errc <- err }()
	// The request arrives but nobody answers; cancelling ends Connect.
	req, err := ln.Accept(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer req.ID.Close()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Connect after cancel: %v", err)
	}
}

package target

import (
	"bytes"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/nvme"
)

// ioBackends runs a test against an inline (mem) and a worker-pool
// (mem without NonBlocking) namespace 1.
func ioBackends(t *testing.T, f func(t *testing.T, s *ioSetup, b *countingBackend)) {
	for _, inline := range []bool{true, false} {
		name := "workers"
		if inline {
			name = "inline"
		}
		t.Run(name, func(t *testing.T) {
			cb := &countingBackend{Backend: mem.New(256, 512)}
			var be blockdev.Backend = cb
			if inline {
				be = inlineBackend{cb}
			}
			s := newIOSetup(t, Options{},
				NamespaceConfig{NSID: 1, Backend: be},
				NamespaceConfig{NSID: 2, Backend: mem.New(16, 4096), ReadOnly: true})
			f(t, s, cb)
		})
	}
}

func TestReadWrite(t *testing.T) {
	ioBackends(t, func(t *testing.T, s *ioSetup, _ *countingBackend) {
		data := bytes.Repeat([]byte("rdmablk!"), 4*512/8)
		s.io.expect(rw(nvme.IOWrite, 1, 10, 4, 0), data, nvme.StatusSuccess)
		s.io.expect(rw(nvme.IOWrite, 1, 20, 1, nvme.RWFUA), data[:512], nvme.StatusSuccess)
		got := make([]byte, 4*512)
		s.io.expect(rw(nvme.IORead, 1, 10, 4, 0), got, nvme.StatusSuccess)
		if !bytes.Equal(got, data) {
			t.Fatal("read back differs")
		}
		// Reading unwritten blocks gives zeroes (and overwrites the buffer).
		got = bytes.Repeat([]byte{0xFF}, 512)
		s.io.expect(rw(nvme.IORead, 1, 200, 1, 0), got, nvme.StatusSuccess)
		if !bytes.Equal(got, make([]byte, 512)) {
			t.Fatal("unwritten block not zero")
		}
		// Last block of the namespace is in range.
		s.io.expect(rw(nvme.IORead, 1, 255, 1, 0), got, nvme.StatusSuccess)

		st := s.tg.Stats()
		if st.ReadCommands != 3 || st.WriteCommands != 2 || st.BytesRead != 6*512 || st.BytesWritten != 5*512 {
			t.Errorf("stats %+v", st)
		}
		// SMART counts the same per controller: 5×512 bytes → 1 data unit.
		smart, err := nvme.ParseSMARTLog(s.admin.getLog(nvme.LogSMART, 512, 0, false, nvme.StatusSuccess))
		if err != nil {
			t.Fatal(err)
		}
		if smart.HostReads != 3 || smart.HostWrites != 2 || smart.DataUnitsRead != 1 || smart.DataUnitsWritten != 1 {
			t.Errorf("SMART %+v", smart)
		}
		// SMART with an offset: the host write commands counter at byte 80.
		part := s.admin.getLog(nvme.LogSMART, 16, 80, false, nvme.StatusSuccess)
		if le32(part, 0) != 2 {
			t.Errorf("SMART at offset 80: %x", part)
		}
	})
}

func TestIOErrors(t *testing.T) {
	ioBackends(t, func(t *testing.T, s *ioSetup, _ *countingBackend) {
		buf := make([]byte, 512)
		cases := []struct {
			name string
			sqe  nvme.SQE
			data []byte
			want nvme.Status
		}{
			{"slba beyond end", rw(nvme.IORead, 1, 256, 1, 0), buf, nvme.StatusLBAOutOfRange.WithDNR()},
			{"range crosses end", rw(nvme.IORead, 1, 255, 2, 0), make([]byte, 1024), nvme.StatusLBAOutOfRange.WithDNR()},
			{"slba+nlb wraps 2^64", rw(nvme.IOWrite, 1, ^uint64(0), 2, 0), make([]byte, 1024), nvme.StatusLBAOutOfRange.WithDNR()},
			{"slba near 2^64", rw(nvme.IORead, 1, ^uint64(0)-1, 1, 0), buf, nvme.StatusLBAOutOfRange.WithDNR()},
			{"write zeroes wraps", rw(nvme.IOWriteZeroes, 1, ^uint64(0), 65536, 0), nil, nvme.StatusLBAOutOfRange.WithDNR()},
			{"length short", rw(nvme.IORead, 1, 0, 2, 0), buf, nvme.StatusDataSGLLengthInvalid.WithDNR()},
			{"length long", rw(nvme.IOWrite, 1, 0, 1, 0), make([]byte, 1024), nvme.StatusDataSGLLengthInvalid.WithDNR()},
			{"nsid 0", rw(nvme.IORead, 0, 0, 1, 0), buf, nvme.StatusInvalidNamespace.WithDNR()},
			{"nsid unknown", rw(nvme.IORead, 9, 0, 1, 0), buf, nvme.StatusInvalidNamespace.WithDNR()},
			{"nsid broadcast read", rw(nvme.IORead, nsidBroadcast, 0, 1, 0), buf, nvme.StatusInvalidNamespace.WithDNR()},
			{"write read-only", rw(nvme.IOWrite, 2, 0, 1, 0), make([]byte, 4096), nvme.StatusNamespaceWriteProtected.WithDNR()},
			{"write zeroes read-only", rw(nvme.IOWriteZeroes, 2, 0, 1, 0), nil, nvme.StatusNamespaceWriteProtected.WithDNR()},
			{"write zeroes with data", rw(nvme.IOWriteZeroes, 1, 0, 1, 0), buf, nvme.StatusDataSGLLengthInvalid.WithDNR()},
			{"unknown opcode", rw(nvme.IOCompare, 1, 0, 1, 0), buf, nvme.StatusInvalidOpcode.WithDNR()},
		}
		for _, c := range cases {
			r := s.io.do(c.sqe, c.data)
			if r.Status() != c.want {
				t.Errorf("%s: %v, want %v", c.name, r.Status(), c.want)
			}
		}
		// Direction must match the opcode.
		r, done := func() (*Request, bool) {
			h := s.io
			h.cid++
			req := &Request{SQE: rw(nvme.IORead, 1, 0, 1, 0), Dir: nvme.DirHostToCtrl, Length: 512, Data: buf}
			req.SQE.SetCID(h.cid)
			return req, h.q.Execute(req)
		}()
		if !done || r.Status() != nvme.StatusInvalidField.WithDNR() {
			t.Errorf("read with host-to-controller data: done %v %v", done, r.Status())
		}
		// Reading the read-only namespace works.
		s.io.expect(rw(nvme.IORead, 2, 15, 1, 0), make([]byte, 4096), nvme.StatusSuccess)
		if st := s.tg.Stats(); st.Errors < uint64(len(cases)) {
			t.Errorf("errors counted %d", st.Errors)
		}
	})
}

func TestFlushWriteZeroesDSM(t *testing.T) {
	ioBackends(t, func(t *testing.T, s *ioSetup, cb *countingBackend) {
		ones := bytes.Repeat([]byte{1}, 8*512)
		s.io.expect(rw(nvme.IOWrite, 1, 0, 8, 0), ones, nvme.StatusSuccess)

		var fl nvme.SQE
		fl.SetFlush(1)
		s.io.expect(fl, nil, nvme.StatusSuccess)
		if n := cb.flushes.Load(); n != 1 {
			t.Fatalf("flushes %d after Flush nsid 1", n)
		}
		fl.SetFlush(nsidBroadcast)
		s.io.expect(fl, nil, nvme.StatusSuccess)
		if n := cb.flushes.Load(); n != 2 {
			t.Fatalf("flushes %d after Flush all", n)
		}
		fl.SetFlush(5)
		s.io.expect(fl, nil, nvme.StatusInvalidNamespace.WithDNR())

		// Write Zeroes blocks 1..2 (DEAC too: still zeroes).
		s.io.expect(rw(nvme.IOWriteZeroes, 1, 1, 2, nvme.RWDeallocate), nil, nvme.StatusSuccess)
		got := make([]byte, 8*512)
		s.io.expect(rw(nvme.IORead, 1, 0, 8, 0), got, nvme.StatusSuccess)
		want := bytes.Clone(ones)
		clear(want[512 : 3*512])
		if !bytes.Equal(got, want) {
			t.Fatal("write zeroes result")
		}

		// DSM deallocate two ranges (mem reads discarded blocks as zero).
		var d nvme.SQE
		d.SetDSM(1, 2, nvme.DSMAttrDeallocate)
		s.io.expect(d, dsmData(nvme.DSMRange{SLBA: 4, NLB: 1}, nvme.DSMRange{SLBA: 6, NLB: 2}), nvme.StatusSuccess)
		s.io.expect(rw(nvme.IORead, 1, 0, 8, 0), got, nvme.StatusSuccess)
		clear(want[4*512 : 5*512])
		clear(want[6*512 : 8*512])
		if !bytes.Equal(got, want) {
			t.Fatal("DSM deallocate result")
		}
		// A bad range anywhere rejects the whole command, touching nothing.
		s.io.expect(rw(nvme.IOWrite, 1, 0, 8, 0), ones, nvme.StatusSuccess)
		d.SetDSM(1, 2, nvme.DSMAttrDeallocate)
		s.io.expect(d, dsmData(nvme.DSMRange{SLBA: 0, NLB: 1}, nvme.DSMRange{SLBA: ^uint64(0), NLB: 2}), nvme.StatusLBAOutOfRange.WithDNR())
		s.io.expect(rw(nvme.IORead, 1, 0, 8, 0), got, nvme.StatusSuccess)
		if !bytes.Equal(got, ones) {
			t.Fatal("rejected DSM changed data")
		}
		// Fewer range bytes than NR says.
		d.SetDSM(1, 3, nvme.DSMAttrDeallocate)
		s.io.expect(d, dsmData(nvme.DSMRange{SLBA: 0, NLB: 1}), nvme.StatusDataSGLLengthInvalid.WithDNR())
		// Hints only: success, nothing changes.
		d.SetDSM(1, 1, nvme.DSMAttrIDR)
		s.io.expect(d, dsmData(nvme.DSMRange{SLBA: 0, NLB: 8}), nvme.StatusSuccess)
		s.io.expect(rw(nvme.IORead, 1, 0, 8, 0), got, nvme.StatusSuccess)
		if !bytes.Equal(got, ones) {
			t.Fatal("DSM hint changed data")
		}
		d.SetDSM(2, 1, nvme.DSMAttrDeallocate)
		s.io.expect(d, dsmData(nvme.DSMRange{SLBA: 0, NLB: 1}), nvme.StatusNamespaceWriteProtected.WithDNR())
	})
}

// errBackend fails every call with err.
type errBackend struct {
	blockdev.Backend
	err error
}

func (b errBackend) ReadAt([][]byte, uint64) error                       { return b.err }
func (b errBackend) WriteAt([][]byte, uint64, blockdev.WriteFlags) error { return b.err }
func (b errBackend) Flush() error                                        { return b.err }
func (b errBackend) NonBlocking() bool                                   { return true }

func TestBackendErrorMapping(t *testing.T) {
	cases := []struct {
		err         error
		read, write nvme.Status
	}{
		{blockdev.ErrMedium, nvme.StatusUnrecoveredRead, nvme.StatusWriteFault},
		{blockdev.ErrOutOfRange, nvme.StatusLBAOutOfRange.WithDNR(), nvme.StatusLBAOutOfRange.WithDNR()},
		{blockdev.ErrReadOnly, nvme.StatusNamespaceWriteProtected.WithDNR(), nvme.StatusNamespaceWriteProtected.WithDNR()},
		{blockdev.ErrClosed, nvme.StatusNamespaceNotReady, nvme.StatusNamespaceNotReady},
		{blockdev.ErrUnaligned, nvme.StatusInvalidField.WithDNR(), nvme.StatusInvalidField.WithDNR()},
		{errors.New("boom"), nvme.StatusInternalError, nvme.StatusInternalError},
	}
	for _, c := range cases {
		wrapped := errors.Join(errors.New("ctx"), c.err)
		s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: errBackend{mem.New(8, 512), wrapped}})
		s.io.expect(rw(nvme.IORead, 1, 0, 1, 0), make([]byte, 512), c.read)
		s.io.expect(rw(nvme.IOWrite, 1, 0, 1, 0), make([]byte, 512), c.write)
		var fl nvme.SQE
		fl.SetFlush(1)
		s.io.expect(fl, nil, c.write)
	}
}

// trustingBackend never checks anything and counts calls: the core's own
// checks must stop bad commands before they reach it.
type trustingBackend struct {
	blocks uint64
	calls  atomic.Int32
}

func (b *trustingBackend) BlockSize() int                { return 512 }
func (b *trustingBackend) Blocks() uint64                { return b.blocks }
func (b *trustingBackend) ReadAt([][]byte, uint64) error { b.calls.Add(1); return nil }
func (b *trustingBackend) WriteAt([][]byte, uint64, blockdev.WriteFlags) error {
	b.calls.Add(1)
	return nil
}
func (b *trustingBackend) Flush() error                     { b.calls.Add(1); return nil }
func (b *trustingBackend) WriteZeroes(uint64, uint64) error { b.calls.Add(1); return nil }
func (b *trustingBackend) Discard(uint64, uint64) error     { b.calls.Add(1); return nil }
func (b *trustingBackend) Close() error                     { return nil }
func (b *trustingBackend) NonBlocking() bool                { return true }

func TestRangeChecksBeforeBackend(t *testing.T) {
	tb := &trustingBackend{blocks: 100}
	s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: tb})
	var dsm nvme.SQE
	dsm.SetDSM(1, 1, nvme.DSMAttrDeallocate)
	cases := []struct {
		sqe  nvme.SQE
		data []byte
		want nvme.Status
	}{
		{rw(nvme.IORead, 1, 100, 1, 0), make([]byte, 512), nvme.StatusLBAOutOfRange.WithDNR()},
		{rw(nvme.IOWrite, 1, 99, 2, 0), make([]byte, 1024), nvme.StatusLBAOutOfRange.WithDNR()},
		{rw(nvme.IOWrite, 1, ^uint64(0)-5, 10, 0), make([]byte, 5120), nvme.StatusLBAOutOfRange.WithDNR()},
		{rw(nvme.IOWriteZeroes, 1, ^uint64(0), 1, 0), nil, nvme.StatusLBAOutOfRange.WithDNR()},
		{rw(nvme.IORead, 1, 0, 2, 0), make([]byte, 512), nvme.StatusDataSGLLengthInvalid.WithDNR()},
		{dsm, dsmData(nvme.DSMRange{SLBA: 1<<64 - 1, NLB: 1}), nvme.StatusLBAOutOfRange.WithDNR()},
	}
	for i, c := range cases {
		if r := s.io.do(c.sqe, c.data); r.Status() != c.want {
			t.Errorf("case %d: %v, want %v", i, r.Status(), c.want)
		}
	}
	if n := tb.calls.Load(); n != 0 {
		t.Fatalf("%d bad commands reached the backend", n)
	}
	s.io.expect(rw(nvme.IORead, 1, 99, 1, 0), make([]byte, 512), nvme.StatusSuccess)
	if tb.calls.Load() != 1 {
		t.Fatal("good command did not reach the backend")
	}
}

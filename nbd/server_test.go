package nbd_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/rdmablk/rdmablk/nbd"
	"github.com/rdmablk/rdmablk/nbd/nbdtest"
)

// memBackend is an in-memory backend that counts the NVMe-mapped calls.
type memBackend struct {
	mu                           sync.Mutex
	data                         []byte
	bs                           int
	flushes, fuas, trims, zeroes atomic.Int64
	unaligned                    atomic.Int64
	failReads                    atomic.Bool
	durable                      []byte // when set: the data as of the last Flush
}

func newMem(size, bs int) *memBackend { return &memBackend{data: make([]byte, size), bs: bs} }

func (m *memBackend) Size() int64    { return int64(len(m.data)) }
func (m *memBackend) BlockSize() int { return m.bs }
func (m *memBackend) check(off int64, n int) {
	if off%int64(m.bs) != 0 || n%m.bs != 0 {
		m.unaligned.Add(1)
	}
}
func (m *memBackend) ReadAt(p []byte, off int64) (int, error) {
	m.check(off, len(p))
	if m.failReads.Load() {
		return 0, errors.New("media error")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return copy(p, m.data[off:]), nil
}
func (m *memBackend) WriteAt(p []byte, off int64) (int, error) {
	m.check(off, len(p))
	m.mu.Lock()
	defer m.mu.Unlock()
	return copy(m.data[off:], p), nil
}
func (m *memBackend) WriteFUA(p []byte, off int64) error {
	m.fuas.Add(1)
	_, err := m.WriteAt(p, off)
	return err
}
func (m *memBackend) Flush() error {
	m.flushes.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	copy(m.durable, m.data)
	return nil
}
func (m *memBackend) Deallocate(off, n int64) error {
	m.check(off, int(n))
	m.trims.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.data[off : off+n])
	return nil
}
func (m *memBackend) WriteZeroes(off, n int64) error {
	m.check(off, int(n))
	m.zeroes.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.data[off : off+n])
	return nil
}

// serve starts a server for the exports on a unix socket.
func serve(t testing.TB, exports ...*nbd.Export) (*nbd.Server, string) {
	t.Helper()
	s, err := nbd.NewServer(nbd.Options{Exports: exports})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "nbd.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, nbd.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, sock
}

func dial(t testing.TB, sock, name string) *nbdtest.Client {
	t.Helper()
	c, err := nbdtest.Dial("unix", sock, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestGoAndInfo(t *testing.T) { contract(t, testGoAndInfo) }

func testGoAndInfo(t *testing.T, wrap wrapFn) {
	m := newMem(1<<20, 512)
	_, sock := serve(t, &nbd.Export{Name: "vol0", Backend: wrap(m)})
	c := dial(t, sock, "vol0")
	if c.Size != 1<<20 {
		t.Fatalf("size %d", c.Size)
	}
	want := uint16(nbd.TFlagHasFlags | nbd.TFlagSendFlush | nbd.TFlagSendFUA | nbd.TFlagSendTrim | nbd.TFlagSendWriteZeros | nbd.TFlagCanMultiConn)
	if c.Flags != want {
		t.Fatalf("flags %#x, want %#x", c.Flags, want)
	}
	if c.MinBlock != 512 || c.PrefBlock != 4096 || c.MaxB != nbd.MaxRequest {
		t.Fatalf("block sizes %d/%d/%d", c.MinBlock, c.PrefBlock, c.MaxB)
	}
	// "" selects the first export; an unknown name is refused.
	dial(t, sock, "")
	if _, err := nbdtest.Dial("unix", sock, "nope"); err == nil {
		t.Fatal("GO for an unknown export succeeded")
	}
}

func TestReadWriteMapping(t *testing.T) { contract(t, testReadWriteMapping) }

func testReadWriteMapping(t *testing.T, wrap wrapFn) {
	m := newMem(1<<20, 512)
	_, sock := serve(t, &nbd.Export{Name: "v", Backend: wrap(m)})
	c := dial(t, sock, "v")
	p := bytes.Repeat([]byte("0123456789abcdef"), 512) // 8 KiB
	if _, err := c.WriteAt(p, 4096); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(p))
	if _, err := c.ReadAt(got, 4096); err != nil || !bytes.Equal(got, p) {
		t.Fatalf("read back: %v", err)
	}
	if err := c.WriteFUA(p[:512], 0); err != nil || m.fuas.Load() != 1 {
		t.Fatalf("FUA write: %v, WriteFUA calls %d", err, m.fuas.Load())
	}
	if err := c.Flush(); err != nil || m.flushes.Load() != 1 {
		t.Fatalf("flush: %v, Flush calls %d", err, m.flushes.Load())
	}
	// Trim: whole blocks only (the partial head block is left alone).
	if err := c.Trim(4096+100, 1024); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadAt(got, 4096); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:512], p[:512]) || !bytes.Equal(got[512:1024], make([]byte, 512)) || !bytes.Equal(got[1024:], p[1024:]) {
		t.Fatal("trim did not deallocate exactly the whole inner block")
	}
	// Write zeroes with unaligned edges.
	if _, err := c.WriteAt(p, 4096); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteZeroes(4096+100, 2000); err != nil {
		t.Fatal(err)
	}
	want := append([]byte(nil), p...)
	clear(want[100:2100])
	if _, err := c.ReadAt(got, 4096); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("write zeroes: %v", err)
	}
	if m.zeroes.Load() == 0 {
		t.Fatal("aligned middle of write zeroes did not use WriteZeroes")
	}
	if m.unaligned.Load() != 0 {
		t.Fatalf("backend saw %d unaligned calls", m.unaligned.Load())
	}
}

func TestUnalignedReadModifyWrite(t *testing.T) { contract(t, testUnalignedReadModifyWrite) }

func testUnalignedReadModifyWrite(t *testing.T, wrap wrapFn) {
	m := newMem(64<<10, 4096)
	_, sock := serve(t, &nbd.Export{Backend: wrap(m)})
	c := dial(t, sock, "")
	ref := make([]byte, 64<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		off := rng.IntN(len(ref) - 1)
		n := 1 + rng.IntN(min(len(ref)-off, 10000))
		p := make([]byte, n)
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		if _, err := c.WriteAt(p, int64(off)); err != nil {
			t.Fatal(err)
		}
		copy(ref[off:], p)
		roff := rng.IntN(len(ref) - 1)
		got := make([]byte, 1+rng.IntN(len(ref)-roff))
		if _, err := c.ReadAt(got, int64(roff)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, ref[roff:roff+len(got)]) {
			t.Fatalf("iteration %d: unaligned read differs", i)
		}
	}
	if m.unaligned.Load() != 0 {
		t.Fatalf("backend saw %d unaligned calls", m.unaligned.Load())
	}
}

func TestErrors(t *testing.T) { contract(t, testErrors) }

func testErrors(t *testing.T, wrap wrapFn) {
	m := newMem(1<<20, 512)
	ro := newMem(1<<20, 512)
	_, sock := serve(t, &nbd.Export{Name: "rw", Backend: wrap(m)}, &nbd.Export{Name: "ro", Backend: wrap(ro), ReadOnly: true})
	c := dial(t, sock, "rw")
	buf := make([]byte, 4096)
	if _, err := c.ReadAt(buf, 1<<20-512); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("read past the end: %v, want EINVAL", err)
	}
	if _, err := c.WriteAt(buf, 1<<20-512); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write past the end: %v, want ENOSPC", err)
	}
	if err := c.Raw(5, 0, 0, 512); !errors.Is(err, syscall.EINVAL) { // CACHE, not advertised
		t.Fatalf("cache: %v", err)
	}
	if err := c.Raw(99, 0, 0, 0); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("unknown command: %v", err)
	}
	m.failReads.Store(true)
	if _, err := c.ReadAt(buf, 0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("failing backend: %v, want EIO", err)
	}
	m.failReads.Store(false)
	// The connection is still usable.
	if _, err := c.ReadAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	r := dial(t, sock, "ro")
	if r.Flags&nbd.TFlagReadOnly == 0 {
		t.Fatal("read-only flag missing")
	}
	if _, err := r.WriteAt(buf, 0); !errors.Is(err, syscall.EPERM) {
		t.Fatalf("write to read-only: %v", err)
	}
}

func TestConcurrentClients(t *testing.T) { contract(t, testConcurrentClients) }

func testConcurrentClients(t *testing.T, wrap wrapFn) {
	m := newMem(4<<20, 512)
	s, sock := serve(t, &nbd.Export{Backend: wrap(m)})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		c := dial(t, sock, "")
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(region int) {
				defer wg.Done()
				base := int64(region) * 128 << 10
				p := make([]byte, 4096)
				got := make([]byte, 4096)
				for i := 0; i < 50; i++ {
					off := base + int64(i%32)*4096
					binary.LittleEndian.PutUint64(p, uint64(off)^uint64(i))
					if _, err := c.WriteAt(p, off); err != nil {
						t.Error(err)
						return
					}
					if _, err := c.ReadAt(got, off); err != nil || !bytes.Equal(got, p) {
						t.Errorf("region %d: read back %v", region, err)
						return
					}
				}
			}(w*8 + g)
		}
	}
	wg.Wait()
	if st := s.Stats(); st.Requests < 4*8*100 || st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// rawConn opens a connection and reads the server greeting.
func rawConn(t *testing.T, sock string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var hello [18]byte
	if _, err := io.ReadFull(c, hello[:]); err != nil {
		t.Fatal(err)
	}
	return c
}

func option(opt uint32, data []byte) []byte {
	b := make([]byte, 16+len(data))
	binary.BigEndian.PutUint64(b, 0x49484156454F5054)
	binary.BigEndian.PutUint32(b[8:], opt)
	binary.BigEndian.PutUint32(b[12:], uint32(len(data)))
	copy(b[16:], data)
	return b
}

func readOptReply(t *testing.T, c net.Conn) (uint32, []byte) {
	t.Helper()
	var h [20]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		t.Fatal(err)
	}
	d := make([]byte, binary.BigEndian.Uint32(h[16:]))
	if _, err := io.ReadFull(c, d); err != nil {
		t.Fatal(err)
	}
	return binary.BigEndian.Uint32(h[12:]), d
}

func TestHandshakeOptions(t *testing.T) { contract(t, testHandshakeOptions) }

func testHandshakeOptions(t *testing.T, wrap wrapFn) {
	m := newMem(1<<20, 512)
	_, sock := serve(t, &nbd.Export{Name: "a", Backend: wrap(m)}, &nbd.Export{Name: "b", Backend: wrap(m)})
	c := rawConn(t, sock)
	c.Write([]byte{0, 0, 0, 3}) // fixed newstyle, no zeroes
	// Structured replies are not supported: ERR_UNSUP.
	c.Write(option(8, nil))
	if typ, _ := readOptReply(t, c); typ != 1<<31|1 {
		t.Fatalf("structured reply: %#x", typ)
	}
	// LIST: two SERVER replies then ACK.
	c.Write(option(3, nil))
	var names []string
	for {
		typ, d := readOptReply(t, c)
		if typ == 1 {
			break
		}
		if typ != 2 {
			t.Fatalf("list reply %#x", typ)
		}
		names = append(names, string(d[4:4+binary.BigEndian.Uint32(d)]))
	}
	if len(names) != 2 || names[0] != "a" || names[1] != "b" {
		t.Fatalf("list: %q", names)
	}
	// Malformed INFO: ERR_INVALID, connection stays.
	c.Write(option(6, []byte{0, 0, 0, 9, 'x'}))
	if typ, _ := readOptReply(t, c); typ != 1<<31|3 {
		t.Fatalf("bad info: %#x", typ)
	}
	// Legacy EXPORT_NAME: size + flags, no zero padding.
	c.Write(option(1, []byte("b")))
	var ex [10]byte
	if _, err := io.ReadFull(c, ex[:]); err != nil || binary.BigEndian.Uint64(ex[:]) != 1<<20 {
		t.Fatalf("export name reply %x %v", ex, err)
	}
	// Transmission works on it.
	cl, _ := c.(*net.UnixConn)
	var req [28]byte
	binary.BigEndian.PutUint32(req[0:], 0x25609513)
	binary.BigEndian.PutUint16(req[6:], 3) // flush
	binary.BigEndian.PutUint64(req[8:], 77)
	cl.Write(req[:])
	var rep [16]byte
	if _, err := io.ReadFull(c, rep[:]); err != nil || binary.BigEndian.Uint64(rep[8:]) != 77 || binary.BigEndian.Uint32(rep[4:]) != 0 {
		t.Fatalf("flush reply %x %v", rep, err)
	}
}

func TestBadInputClosesConnectionOnly(t *testing.T) { contract(t, testBadInputClosesConnectionOnly) }

func testBadInputClosesConnectionOnly(t *testing.T, wrap wrapFn) {
	m := newMem(1<<20, 512)
	_, sock := serve(t, &nbd.Export{Backend: wrap(m)})
	for name, payload := range map[string][]byte{
		"bad option magic": append([]byte{0, 0, 0, 1}, bytes.Repeat([]byte{0xEE}, 16)...),
		"huge option":      append([]byte{0, 0, 0, 1}, option(6, nil)[:12]...),
		"unknown flags":    {0xff, 0xff, 0xff, 0xff},
	} {
		c := rawConn(t, sock)
		p := payload
		if name == "huge option" {
			p = append(p, 0x7f, 0xff, 0xff, 0xff)
		}
		c.Write(p)
		if _, err := io.ReadAll(c); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// Bad request magic in transmission.
	c := dial(t, sock, "")
	_ = c
	raw := rawConn(t, sock)
	raw.Write([]byte{0, 0, 0, 3})
	raw.Write(option(1, nil))
	io.ReadFull(raw, make([]byte, 10))
	raw.Write(bytes.Repeat([]byte{0xAB}, 28))
	if _, err := io.ReadAll(raw); err != nil {
		t.Fatal(err)
	}
	// The server still serves.
	if _, err := c.ReadAt(make([]byte, 512), 0); err != nil {
		t.Fatal(err)
	}
}

func TestCloseWithOpenConnections(t *testing.T) { contract(t, testCloseWithOpenConnections) }

func testCloseWithOpenConnections(t *testing.T, wrap wrapFn) {
	m := newMem(1<<20, 512)
	s, err := nbd.NewServer(nbd.Options{Exports: []*nbd.Export{{Backend: wrap(m)}}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	c, err := nbdtest.Dial("unix", l.Addr().String(), "")
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := <-done; !errors.Is(err, nbd.ErrServerClosed) {
		t.Fatal(err)
	}
	if _, err := c.ReadAt(make([]byte, 512), 0); !errors.Is(err, nbdtest.ErrClosed) {
		t.Fatalf("read after server close: %v", err)
	}
}

func FuzzHandshake(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3})
	f.Add(append([]byte{0, 0, 0, 3}, option(7, []byte{0, 0, 0, 0, 0, 0})...))
	f.Add(append([]byte{0, 0, 0, 1}, option(1, nil)...))
	m := newMem(64<<10, 512)
	s, err := nbd.NewServer(nbd.Options{Exports: []*nbd.Export{{Backend: m}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		a, b := net.Pipe()
		go func() {
			io.Copy(io.Discard, b)
		}()
		go func() {
			b.Write(in)
			b.Close()
		}()
		s.ServeConn(a)
	})
}

func BenchmarkRead4K(b *testing.B) {
	m := newMem(1<<20, 512)
	_, sock := serve(b, &nbd.Export{Backend: m})
	c := dial(b, sock, "")
	p := make([]byte, 4096)
	b.SetBytes(4096)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.ReadAt(p, int64(i%256)*4096); err != nil {
			b.Fatal(err)
		}
	}
}

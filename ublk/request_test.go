package ublk

import (
	"syscall"
	"testing"
)

func testLimits() *limits {
	return &limits{devSectors: 1 << 20, lbsMask: 7, maxIOSectors: 256, maxDiscard: 1 << 16, maxWriteZeroes: 1 << 12}
}

func TestParseRequest(t *testing.T) {
	lim := testLimits()
	buf := make([]byte, 256*512)
	for _, c := range []struct {
		name string
		d    ioDesc
		want syscall.Errno
		req  Request
	}{
		{"read", ioDesc{opFlags: iodOpRead, nrSectors: 8, startSector: 16}, 0, Request{Op: OpRead, Offset: 16 * 512, Length: 4096}},
		{"write fua", ioDesc{opFlags: iodOpWrite | iodFUA, nrSectors: 256, startSector: 1<<20 - 256}, 0, Request{Op: OpWrite, FUA: true, Offset: (1<<20 - 256) * 512, Length: 256 * 512}},
		{"flush", ioDesc{opFlags: iodOpFlush}, 0, Request{Op: OpFlush}},
		{"discard", ioDesc{opFlags: iodOpDiscard, nrSectors: 1 << 16, startSector: 0}, 0, Request{Op: OpDiscard, Length: 1 << 25}},
		{"write zeroes nounmap", ioDesc{opFlags: iodOpWriteZeroes | iodNoUnmap, nrSectors: 8, startSector: 8}, 0, Request{Op: OpWriteZeroes, NoUnmap: true, Offset: 4096, Length: 4096}},
		{"zero-length read", ioDesc{opFlags: iodOpRead, nrSectors: 0}, syscall.EINVAL, Request{Op: OpRead}},
		{"read over max", ioDesc{opFlags: iodOpRead, nrSectors: 264}, syscall.EINVAL, Request{Op: OpRead}},
		{"unaligned start", ioDesc{opFlags: iodOpRead, nrSectors: 8, startSector: 1}, syscall.EINVAL, Request{Op: OpRead}},
		{"unaligned length", ioDesc{opFlags: iodOpWrite, nrSectors: 9}, syscall.EINVAL, Request{Op: OpWrite}},
		{"past the end", ioDesc{opFlags: iodOpRead, nrSectors: 8, startSector: 1 << 20}, syscall.EIO, Request{Op: OpRead}},
		{"start overflow", ioDesc{opFlags: iodOpRead, nrSectors: 8, startSector: ^uint64(0) &^ 7}, syscall.EIO, Request{Op: OpRead}},
		{"straddles the end", ioDesc{opFlags: iodOpWrite, nrSectors: 16, startSector: 1<<20 - 8}, syscall.EIO, Request{Op: OpWrite}},
		{"write same", ioDesc{opFlags: iodOpWriteSame, nrSectors: 8}, syscall.EOPNOTSUPP, Request{}},
		{"zone op", ioDesc{opFlags: 13, nrSectors: 8}, syscall.EOPNOTSUPP, Request{}},
		{"write zeroes over max", ioDesc{opFlags: iodOpWriteZeroes, nrSectors: 1<<12 + 8}, syscall.EINVAL, Request{Op: OpWriteZeroes}},
	} {
		var r Request
		errno := parseRequest(c.d, lim, buf, &r)
		if errno != c.want {
			t.Errorf("%s: errno %v, want %v", c.name, errno, c.want)
			continue
		}
		if errno != 0 {
			continue
		}
		data := r.Data
		r.Data = nil
		if r.Op != c.req.Op || r.FUA != c.req.FUA || r.NoUnmap != c.req.NoUnmap || r.Offset != c.req.Offset || r.Length != c.req.Length {
			t.Errorf("%s: %+v, want %+v", c.name, r, c.req)
		}
		if (r.Op == OpRead || r.Op == OpWrite) && (uint64(len(data)) != r.Length || &data[0] != &buf[0]) {
			t.Errorf("%s: data %d bytes", c.name, len(data))
		}
	}

	noDiscard := *lim
	noDiscard.maxDiscard, noDiscard.maxWriteZeroes = 0, 0
	var r Request
	if e := parseRequest(ioDesc{opFlags: iodOpDiscard, nrSectors: 8}, &noDiscard, buf, &r); e != syscall.EOPNOTSUPP {
		t.Errorf("discard without support: %v", e)
	}
	if e := parseRequest(ioDesc{opFlags: iodOpWriteZeroes, nrSectors: 8}, &noDiscard, buf, &r); e != syscall.EOPNOTSUPP {
		t.Errorf("write zeroes without support: %v", e)
	}
	ro := *lim
	ro.readOnly = true
	if e := parseRequest(ioDesc{opFlags: iodOpWrite, nrSectors: 8}, &ro, buf, &r); e != syscall.EROFS {
		t.Errorf("write to read-only: %v", e)
	}
	if e := parseRequest(ioDesc{opFlags: iodOpRead, nrSectors: 8}, lim, buf[:100], &r); e != syscall.EINVAL {
		t.Errorf("read into a short buffer: %v", e)
	}
}

// FuzzParseRequest: whatever the kernel writes into a descriptor, an
// accepted request lies inside the device, is whole blocks, respects the
// limits and its Data is exactly Length bytes of the tag's buffer.
func FuzzParseRequest(f *testing.F) {
	f.Add(uint32(iodOpRead), uint32(8), uint64(0), uint64(1<<20), uint8(3), uint32(256))
	f.Add(uint32(iodOpWrite|iodFUA), uint32(256), uint64(1<<20-256), uint64(1<<20), uint8(0), uint32(256))
	f.Add(uint32(iodOpDiscard), ^uint32(0), ^uint64(0), uint64(1<<54), uint8(3), uint32(1))
	f.Fuzz(func(t *testing.T, opFlags, nr uint32, start, devSectors uint64, lbsShift uint8, maxIO uint32) {
		if devSectors == 0 || devSectors >= 1<<55 || maxIO == 0 || maxIO > 1<<16 {
			return
		}
		lim := &limits{devSectors: devSectors, lbsMask: 1<<(lbsShift%4) - 1, maxIOSectors: maxIO, maxDiscard: ^uint32(0), maxWriteZeroes: 1 << 20}
		buf := make([]byte, int(maxIO)*512)
		var r Request
		if parseRequest(ioDesc{opFlags: opFlags, nrSectors: nr, startSector: start}, lim, buf, &r) != 0 || r.Op == OpFlush {
			return
		}
		bs := (lim.lbsMask + 1) * 512
		end := r.Offset + r.Length
		if r.Length == 0 || end < r.Offset || end > devSectors*512 || r.Offset%bs != 0 || r.Length%bs != 0 {
			t.Fatalf("accepted %+v on a %d-sector device", r, devSectors)
		}
		if r.Op == OpRead || r.Op == OpWrite {
			if r.Length > uint64(maxIO)*512 || uint64(len(r.Data)) != r.Length {
				t.Fatalf("accepted %+v (max %d sectors), data %d", r, maxIO, len(r.Data))
			}
		}
	})
}

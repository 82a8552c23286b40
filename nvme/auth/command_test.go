package auth

import (
	"bytes"
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
)

// TestAuthCommandGolden: bytes from Linux struct nvmf_auth_send_command.
func TestAuthCommandGolden(t *testing.T) {
	var s nvme.SQE
	for i := range s {
		s[i] = 0xEE // stale bytes must be cleared, flags/CID/SGL1 kept
	}
	SetAuthSend(&s, 0x48)
	want := make([]byte, 64)
	want[0], want[1], want[2], want[3] = 0x7F, 0xEE, 0xEE, 0xEE // opcode, flags, CID
	want[4] = 0x05                                              // fctype Authentication Send
	copy(want[24:40], bytes.Repeat([]byte{0xEE}, 16))           // SGL1
	want[41], want[42], want[43] = 0x01, 0x01, 0xE9             // SPSP0, SPSP1, SECP
	want[44] = 0x48                                             // TL
	if !bytes.Equal(s[:], want) {
		t.Fatalf("SetAuthSend:\n%x\nwant\n%x", s[:], want)
	}
	c := AuthCmd{&s}
	if off, err := c.Check(); err != nil || c.Length() != 0x48 {
		t.Fatalf("Check = %d, %v", off, err)
	}
	SetAuthReceive(&s, 4096)
	if s[4] != 0x06 || c.Length() != 4096 || c.SECP() != 0xE9 {
		t.Fatalf("SetAuthReceive: %x", s[:])
	}
	for _, tc := range []struct {
		off int
		val byte
		err error
	}{{43, 0xEA, ErrSECP}, {41, 0, ErrSPSP}, {42, 2, ErrSPSP}} {
		SetAuthReceive(&s, 16)
		s[tc.off] = tc.val
		if off, err := c.Check(); err != tc.err || off != tc.off {
			t.Errorf("byte %d = %#x: Check = %d, %v", tc.off, tc.val, off, err)
		}
	}
	for _, n := range []uint32{0, MaxMessage + 1} {
		SetAuthSend(&s, n)
		if off, err := c.Check(); err != ErrLength || off != 44 {
			t.Errorf("TL %d: Check = %d, %v", n, off, err)
		}
	}
}

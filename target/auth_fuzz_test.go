package target

import (
	"encoding/binary"
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/auth"
)

// FuzzAuthCommands drives a queue that must authenticate with arbitrary
// Authentication Send / Receive sequences (and SQE field values). Whatever
// the host sends, the core never panics or hangs, no command other than
// Authentication Send/Receive runs while the queue is not authenticated,
// and no I/O reaches the backend.
//
// Input: a sequence of records. Byte 0: bit 0 Send (0) or Receive (1),
// bit 1 corrupts SECP/SPSP, bit 2 makes the SGL length differ from TL/AL;
// bytes 1-2: TL/AL (little endian, mod 9000); a Send's message follows
// (TL bytes, as far as the input has them).
func FuzzAuthCommands(f *testing.F) {
	h, err := auth.NewHost(auth.HostConfig{HostNQN: testHostNQN, SubNQN: testSubNQN, Secret: hostSecret,
		DHGroups: []auth.DHGroupID{auth.DHNull}}, 1)
	if err != nil {
		f.Fatal(err)
	}
	neg, _ := h.Negotiate()
	rec := func(op byte, n int, msg []byte) []byte {
		b := []byte{op, byte(n), byte(n >> 8)}
		return append(b, msg...)
	}
	f.Add(rec(0, len(neg), neg))
	f.Add(append(rec(0, len(neg), neg), rec(1, 4096, nil)...))
	f.Add(append(append(rec(0, len(neg), neg), rec(1, 4096, nil)...), rec(0, 48, make([]byte, 48))...))
	f.Add(append(rec(1, 16, nil), rec(0, len(neg), neg)...))
	f.Add(rec(2, len(neg), neg))
	f.Add(rec(4, 4096, nil))
	f.Fuzz(func(t *testing.T, in []byte) {
		rig := newAuthRig(t, HostAuth{Secret: hostSecret, DHGroups: []auth.DHGroupID{auth.DHNull}}, true)
		a := newHost(t, rig.tg, 32)
		a.connectAuth(true)
		// At most 16 commands per input: longer sequences add nothing a
		// state machine of a few steps can reach and slow the fuzzer down.
		for ops := 0; len(in) >= 3 && ops < 16; ops++ {
			op, n := in[0], int(binary.LittleEndian.Uint16(in[1:3]))%9000
			in = in[3:]
			var s nvme.SQE
			var data []byte
			if op&1 == 0 {
				auth.SetAuthSend(&s, uint32(n))
				k := min(n, len(in))
				data = make([]byte, n)
				copy(data, in[:k])
				in = in[k:]
			} else {
				auth.SetAuthReceive(&s, uint32(n))
				data = make([]byte, n)
			}
			if op&2 != 0 {
				s[43] ^= op
				s[41] ^= op >> 4
			}
			if op&4 != 0 && len(data) > 0 {
				data = data[:len(data)-1]
			}
			r := a.do(s, data)
			if r.CQE.CID() != a.cid {
				t.Fatalf("CQE for CID %d", r.CQE.CID())
			}
		}
		if !a.q.auth.ok.Load() {
			a.identify(nvme.CNSController, 0, statusAuthRequired)
		}
		if n := rig.be.n.Load(); n != 0 {
			t.Fatalf("%d backend calls", n)
		}
	})
}

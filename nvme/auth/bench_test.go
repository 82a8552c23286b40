package auth

import "testing"

// BenchmarkTransaction measures one whole bidirectional transaction (both
// sides) per DH group with SHA-256: what a connect costs per queue. Run it
// on a quiet host only.
func BenchmarkTransaction(b *testing.B) {
	hs, cs := secretN(1, HashSHA256, 32), secretN(2, HashSHA256, 32)
	for _, g := range AllDHGroups {
		b.Run(g.String(), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				h, _ := NewHost(HostConfig{HostNQN: tHostNQN, SubNQN: tSubNQN, Secret: hs, CtrlSecret: &cs}, uint16(i))
				c, _ := NewController(ControllerConfig{HostNQN: tHostNQN, SubNQN: tSubNQN, Secret: hs, CtrlSecret: &cs, DHGroups: []DHGroupID{g}})
				neg, _ := h.Negotiate()
				c.Send(neg)
				chal, _ := c.Receive()
				rep, _ := h.Challenge(chal)
				c.Send(rep)
				s1, _ := c.Receive()
				s2, err := h.Success1(s1)
				if err != nil || c.Send(s2) != nil || !c.Authenticated() {
					b.Fatal(err)
				}
			}
		})
	}
}

package guest

import (
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/internal/attach"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/test/verifyload"
)

// TestNBDANAFailoverFailback: two listeners of one target reporting ANA;
// path B (listed first) is non-optimized, so NBD I/O uses A. A turns
// inaccessible with NBD I/O running → I/O moves to B without an NBD
// error and without reconnecting; A turns optimized → I/O fails back.
func TestNBDANAFailoverFailback(t *testing.T) {
	for _, pr := range profiles {
		t.Run(pr.name, func(t *testing.T) {
			const pathA, pathB = "192.0.2.1:4420", "192.0.2.2:4420"
			const portA, portB = 1, 2
			r := newRig(t)
			r.listen(t, pathA, portA)
			r.listen(t, pathB, portB)
			if err := r.tgt.SetANAState(portB, target.DefaultANAGroup, nvme.ANAStateNonOptimized); err != nil {
				t.Fatal(err)
			}
			a, sock := startAttachment(t, attach.Config{Paths: []string{pathB, pathA}}, initiator.Options{Provider: r.host(pr.p)})
			s := a.Session()
			const b, aIdx = 0, 1
			verifyload.WaitPath(t, s, b, initiator.PathLive, false, 60*time.Second)
			verifyload.WaitPath(t, s, aIdx, initiator.PathLive, true, 60*time.Second)
			load := startNBDLoad(t, sock, 2, 4)
			load.WaitOps(100)

			if err := r.tgt.SetANAState(portA, target.DefaultANAGroup, nvme.ANAStateInaccessible); err != nil {
				t.Fatal(err)
			}
			verifyload.WaitPath(t, s, b, initiator.PathLive, true, 60*time.Second)
			load.WaitOps(200)
			if p := s.Paths()[aIdx]; p.ANA != nvme.ANAStateInaccessible || p.State != initiator.PathLive {
				t.Fatalf("path A after failover: %+v", p)
			}

			if err := r.tgt.SetANAState(portA, target.DefaultANAGroup, nvme.ANAStateOptimized); err != nil {
				t.Fatal(err)
			}
			verifyload.WaitPath(t, s, aIdx, initiator.PathLive, true, 60*time.Second)
			load.WaitOps(200)
			load.Finish()
			st := a.Status()
			if !st.Paths[aIdx].Preferred || st.Paths[aIdx].Connects != 1 || st.Paths[b].Connects != 1 {
				t.Fatalf("status after failback: %+v", st.Paths)
			}
		})
	}
}

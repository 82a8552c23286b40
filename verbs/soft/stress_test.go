package soft_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// TestConcurrentPosters drives one QP from several goroutines (posting
// SENDs, WRITEs and READs) while another polls, and checks that every WR
// completes exactly once, successfully, with its data intact.
func TestConcurrentPosters(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		t.Run(map[bool]string{false: "Fabric", true: "TCP"}[tcp], func(t *testing.T) {
			const posters, perPoster, size = 4, 200, 1024
			ctx := testCtx(t)
			c := verbs.QPCap{MaxSendWR: 64, MaxRecvWR: 256, MaxSendSGE: 1, MaxRecvSGE: 1}
			cl, sv := connectPair(t, tcp, soft.ProfileDefault, c, fullDepth, fullDepth)
			src := cl.reg(t, make([]byte, posters*perPoster*size), verbs.AccessLocalWrite)
			remote := sv.reg(t, make([]byte, posters*perPoster*size), verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
			rbuf := sv.reg(t, make([]byte, 256*8), verbs.AccessLocalWrite)
			for i := range src.Buf() {
				src.Buf()[i] = byte(i * 13)
			}

			// The server reposts receives as SENDs consume them and checks
			// each 8-byte message is a WR ID it has not seen; it stops once
			// every SEND arrived.
			sendsWant := 0
			for i := 0; i < perPoster; i++ {
				if i%3 == 1 {
					sendsWant += posters
				}
			}
			var recvs []verbs.RecvWR
			for i := 0; i < 256; i++ {
				recvs = append(recvs, verbs.RecvWR{ID: uint64(i), SGL: sgeOf(rbuf, i*8, 8)})
			}
			if _, err := sv.qp.PostRecv(recvs); err != nil {
				t.Fatal(err)
			}
			total := posters * perPoster
			done := make(chan error, 1)
			go func() {
				seen := make(map[uint64]bool)
				wc := make([]verbs.WorkCompletion, 64)
				for len(seen) < sendsWant {
					n, err := sv.rcq.Poll(wc)
					if err != nil {
						done <- err
						return
					}
					for _, w := range wc[:n] {
						id := binary.LittleEndian.Uint64(rbuf.Buf()[w.ID*8:])
						if w.Status != verbs.WCSuccess || seen[id] {
							done <- fmt.Errorf("server receive %+v of message %d (seen before: %v)", w, id, seen[id])
							return
						}
						seen[id] = true
						if _, err := sv.qp.PostRecv(recvs[w.ID : w.ID+1]); err != nil {
							done <- err
							return
						}
					}
					if n == 0 {
						if err := verbs.Wait(ctx, sv.rcq); err != nil {
							done <- fmt.Errorf("server saw %d of %d messages: %w", len(seen), sendsWant, err)
							return
						}
					}
				}
				done <- nil
			}()

			// Posters share the QP; the send queue may be full, so they retry
			// when the poller reports progress.
			progress := make(chan struct{}, 1)
			var wg sync.WaitGroup
			for g := 0; g < posters; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					for i := 0; i < perPoster; i++ {
						id := uint64(g*perPoster + i)
						off := int(id) * size
						wr := verbs.SendWR{ID: id, Flags: verbs.SendSignaled, SGL: sgeOf(src, off, size),
							RemoteAddr: remote.Addr() + uint64(off), RKey: remote.RKey()}
						switch i % 3 {
						case 0:
							wr.Opcode = verbs.OpRDMAWrite
						case 1:
							wr.Opcode = verbs.OpSend
							wr.SGL = sgeOf(src, off, 8)
							binary.LittleEndian.PutUint64(src.Buf()[off:], id)
						case 2:
							// Read back what an earlier WRITE of this
							// poster stored, into the same local bytes.
							wr.Opcode = verbs.OpRDMARead
							prev := int(id-2) * size
							wr.RemoteAddr = remote.Addr() + uint64(prev)
							wr.SGL = sgeOf(src, off, size)
						}
						for {
							n, err := cl.qp.PostSend([]verbs.SendWR{wr})
							if n == 1 {
								break
							}
							if err == nil {
								t.Errorf("PostSend posted nothing without error")
								return
							}
							select {
							case <-progress:
							case <-ctx.Done():
								t.Errorf("poster %d stuck: %v", g, err)
								return
							}
						}
					}
				}(g)
			}

			got := make(map[uint64]bool)
			wc := make([]verbs.WorkCompletion, 64)
			for len(got) < total {
				n, err := cl.scq.Poll(wc)
				if err != nil {
					t.Fatal(err)
				}
				for _, w := range wc[:n] {
					if w.Status != verbs.WCSuccess || got[w.ID] {
						t.Fatalf("completion %+v (seen before: %v)", w, got[w.ID])
					}
					got[w.ID] = true
				}
				if n > 0 {
					select {
					case progress <- struct{}{}:
					default:
					}
					continue
				}
				if err := verbs.Wait(ctx, cl.scq); err != nil {
					t.Fatalf("after %d of %d completions: %v", len(got), total, err)
				}
			}
			wg.Wait()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			// Each READ fetched what the WRITE two WRs earlier stored.
			for g := 0; g < posters; g++ {
				for i := 2; i < perPoster; i += 3 {
					id := g*perPoster + i
					if !bytes.Equal(src.Buf()[id*size:(id+1)*size], remote.Buf()[(id-2)*size:(id-1)*size]) {
						t.Fatalf("READ %d does not match WRITE %d", id, id-2)
					}
				}
			}
		})
	}
}

// TestDisconnectUnderLoad disconnects while WRs stream in both directions:
// every WR completes exactly once (success or flush), nothing hangs.
func TestDisconnectUnderLoad(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		for _, how := range []string{"Disconnect", "CutLink", "InjectQPError", "PeerClose"} {
			t.Run(map[bool]string{false: "Fabric", true: "TCP"}[tcp]+"/"+how, func(t *testing.T) {
				ctx := testCtx(t)
				c := verbs.QPCap{MaxSendWR: 128, MaxRecvWR: 128, MaxSendSGE: 1, MaxRecvSGE: 1}
				cl, sv := connectPair(t, tcp, soft.ProfileDefault, c, fullDepth, fullDepth)
				lbuf := cl.reg(t, make([]byte, 128<<10), verbs.AccessLocalWrite)
				rbuf := sv.reg(t, make([]byte, 128<<10), verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
				var recvs []verbs.RecvWR
				for i := 0; i < 128; i++ {
					recvs = append(recvs, verbs.RecvWR{ID: uint64(1000 + i), SGL: sgeOf(rbuf, i*64, 64)})
				}
				if _, err := sv.qp.PostRecv(recvs); err != nil {
					t.Fatal(err)
				}
				var wrs []verbs.SendWR
				for i := 0; i < 128; i++ {
					wr := verbs.SendWR{ID: uint64(i), Flags: verbs.SendSignaled, RemoteAddr: rbuf.Addr() + uint64(i*1024), RKey: rbuf.RKey(),
						SGL: sgeOf(lbuf, i*1024, 1024)}
					switch i % 3 {
					case 0:
						wr.Opcode = verbs.OpRDMAWrite
					case 1:
						wr.Opcode, wr.SGL = verbs.OpSend, sgeOf(lbuf, i*1024, 64)
					case 2:
						wr.Opcode = verbs.OpRDMARead
					}
					wrs = append(wrs, wr)
				}
				if _, err := cl.qp.PostSend(wrs); err != nil {
					t.Fatal(err)
				}
				switch how {
				case "Disconnect":
					cl.id.Disconnect()
				case "CutLink":
					soft.CutLink(cl.id)
				case "InjectQPError":
					soft.InjectQPError(cl.qp)
				case "PeerClose":
					sv.id.Close()
				}
				wcs := waitN(t, ctx, cl.scq, len(wrs))
				okSeen, failed := 0, false
				for i, w := range wcs {
					if w.ID != uint64(i) {
						t.Fatalf("completion %d has ID %d: out of order", i, w.ID)
					}
					if w.Status == verbs.WCSuccess {
						if failed {
							t.Fatalf("success after an error: %+v", wcs)
						}
						okSeen++
					} else {
						failed = true
					}
				}
				t.Logf("%d of %d completed before the %s", okSeen, len(wrs), how)
				// The server's receives complete too (consumed or flushed)
				// once its side is down.
				if how != "InjectQPError" {
					waitDone(t, ctx, sv.id)
					if how != "PeerClose" {
						waitN(t, ctx, sv.rcq, 128)
					}
				}
			})
		}
	}
}

//go:build ibverbs

package ibverbs_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/ibverbs"
)

// TestPeerQPErrorRetries measures how long the requester takes to give up
// when the responder QP is in the error state (rxe drops the packets; the
// requester should end with WCRetryExcErr after retry_count retries).
//
// Diagnostic (RDMABLK_IBV_DIAG=1): on rxe in Debian's 6.1 the requester
// gets no completion within 90 s although the QP reports an ACK timeout
// of 19 (2.1 s) and 7 retries.
func TestPeerQPErrorRetries(t *testing.T) {
	if os.Getenv("RDMABLK_IBV_DIAG") != "1" {
		t.Skip("diagnostic: set RDMABLK_IBV_DIAG=1")
	}
	bp := newBenchPair(t, 4)
	for _, q := range []verbs.QueuePair{bp.cqp, bp.sqp} {
		a, err := ibverbs.QueryQP(q)
		t.Logf("QP %d: %+v %v", q.Num(), a, err)
	}
	if err := ibverbs.InjectQPError(bp.sqp); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	wr := verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{{Addr: bp.cmr.Addr(), Length: 8, LKey: bp.cmr.LKey()}}, RemoteAddr: bp.smr.Addr(), RKey: bp.smr.RKey()}
	if n, err := bp.cqp.PostSend([]verbs.SendWR{wr}); n != 1 {
		t.Fatal(err)
	}
	wc := make([]verbs.WorkCompletion, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for {
		n, err := bp.ccq.Poll(wc)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			t.Logf("completion after %v: %+v", time.Since(start), wc[0])
			if wc[0].Status == verbs.WCSuccess {
				t.Fatalf("a write to a peer in the error state succeeded")
			}
			return
		}
		if err := verbs.Wait(ctx, bp.ccq); err != nil {
			t.Fatalf("no completion after %v: %v", time.Since(start), err)
		}
	}
}

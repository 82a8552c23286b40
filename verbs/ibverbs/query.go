//go:build ibverbs

package ibverbs

/*
#include "rb.h"
*/
import "C"

import (
	"fmt"

	"github.com/rdmablk/rdmablk/verbs"
)

// QPAttr is what ibv_query_qp reports about a connected QP, for
// diagnostics: the state (ibv_qp_state: 3 RTR, 4 RTS, 6 ERR), the local
// ACK timeout exponent (4.096 µs × 2^Timeout; 0 waits forever), the retry
// counts and the negotiated READ depths (ORD, IRD).
type QPAttr struct {
	State, Timeout, RetryCount, RNRRetry int
	MaxRdAtomic, MaxDestRdAtomic         int
}

// QueryQP queries qp (created by this provider).
func QueryQP(qp verbs.QueuePair) (QPAttr, error) {
	q, ok := qp.(*queuePair)
	if !ok {
		return QPAttr{}, fmt.Errorf("%w: not an ibverbs QP", verbs.ErrInvalid)
	}
	q.sendMu.Lock()
	defer q.sendMu.Unlock()
	if q.qp == nil {
		return QPAttr{}, verbs.ErrClosed
	}
	var st, to, rc, rnr, rd, drd C.int
	if e := C.rb_query_qp(q.qp, &st, &to, &rc, &rnr, &rd, &drd); e != 0 {
		return QPAttr{}, errnoErr("ibv_query_qp", e)
	}
	return QPAttr{State: int(st), Timeout: int(to), RetryCount: int(rc), RNRRetry: int(rnr),
		MaxRdAtomic: int(rd), MaxDestRdAtomic: int(drd)}, nil
}

package rdma

import "strconv"

// State is the life-cycle state of a request slot (the explicit request
// state machine of the transport, DESIGN.md §3). Every *Pending state waits
// on a counted resource, never on a lock:
//
//	Free → New → NeedBuffer → ReadFromHostPending → ReadingFromHost →
//	Executing → WriteToHostPending → CompletePending → Completing → Free
//
// States a command does not need are skipped (a command without data goes
// New → Executing → CompletePending; a command rejected by the transport
// goes New → CompletePending). Every state is read: the waiting states
// choose the transition a request takes when its resource frees up
// (queue.advance), the in-flight states are checked against the work
// completion or core completion that ends them, and Free/New tell a free
// slot from an allocated one.
type State uint8

const (
	// StateFree: the slot is unused and on the free list.
	StateFree State = iota
	// StateNew: a capsule was received into a receive buffer and bound to
	// this slot; its SQE is being parsed and its SGL bounds-checked.
	StateNew
	// StateNeedBuffer: the command moves data by keyed SGL and waits for a
	// data buffer from the queue's pool (counted resource: free buffers).
	StateNeedBuffer
	// StateReadFromHostPending: a host write waits for an RDMA READ credit
	// (the negotiated ORD) and a send-queue slot.
	StateReadFromHostPending
	// StateReadingFromHost: the RDMA READ of the host's data is posted; the
	// slot waits for its completion.
	StateReadingFromHost
	// StateExecuting: the core owns the request (Execute returned false);
	// the slot waits for QueueConn.Complete.
	StateExecuting
	// StateWriteToHostPending: a host read waits for two send-queue slots
	// (its unsignaled RDMA WRITE and the CQE SEND, posted together).
	StateWriteToHostPending
	// StateCompletePending: the CQE waits for a send-queue slot.
	StateCompletePending
	// StateCompleting: the CQE SEND (and any RDMA WRITE before it) is
	// posted; the slot waits for the SEND's completion, then returns to
	// Free.
	StateCompleting
)

var stateNames = [...]string{
	StateFree:                "Free",
	StateNew:                 "New",
	StateNeedBuffer:          "NeedBuffer",
	StateReadFromHostPending: "ReadFromHostPending",
	StateReadingFromHost:     "ReadingFromHost",
	StateExecuting:           "Executing",
	StateWriteToHostPending:  "WriteToHostPending",
	StateCompletePending:     "CompletePending",
	StateCompleting:          "Completing",
}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

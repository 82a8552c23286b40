package rdma

import "strconv"

// State is the life-cycle state of a request slot (the explicit request
// state machine of the transport, DESIGN.md §3). Every *Pending state waits
// on a counted resource, never on a lock:
//
//	Free → New → NeedBuffer → ReadFromHostPending → ReadingFromHost →
//	ReadyToExecute → Executing → Executed → WriteToHostPending →
//	WritingToHost → CompletePending → Completing → Free
//
// States a command does not need are skipped (a command without data goes
// New → ReadyToExecute; a command rejected by the transport goes New →
// CompletePending).
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
	// StateReadyToExecute: any host data is in Request.Data; the request is
	// about to be handed to the core.
	StateReadyToExecute
	// StateExecuting: the core owns the request (Execute returned false);
	// the slot waits for QueueConn.Complete.
	StateExecuting
	// StateExecuted: the core finished; the CQE is final.
	StateExecuted
	// StateWriteToHostPending: a host read waits for two send-queue slots
	// (its RDMA WRITE and the CQE SEND).
	StateWriteToHostPending
	// StateWritingToHost: the RDMA WRITE (unsignaled) is queued, chained
	// before the CQE SEND in the same PostSend batch.
	StateWritingToHost
	// StateCompletePending: the CQE waits for a send-queue slot.
	StateCompletePending
	// StateCompleting: the CQE SEND is posted; the slot waits for its
	// completion, then returns to Free.
	StateCompleting
)

var stateNames = [...]string{
	StateFree:                "Free",
	StateNew:                 "New",
	StateNeedBuffer:          "NeedBuffer",
	StateReadFromHostPending: "ReadFromHostPending",
	StateReadingFromHost:     "ReadingFromHost",
	StateReadyToExecute:      "ReadyToExecute",
	StateExecuting:           "Executing",
	StateExecuted:            "Executed",
	StateWriteToHostPending:  "WriteToHostPending",
	StateWritingToHost:       "WritingToHost",
	StateCompletePending:     "CompletePending",
	StateCompleting:          "Completing",
}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

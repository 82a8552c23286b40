// Package spin holds the adaptive spin budget shared by the pollers that
// spin on a completion queue before they sleep on its event channel:
// the target's RDMA poll groups (target/rdma) and the initiator's queue
// goroutines (initiator). It is a pure function: no goroutines, no state,
// no buffers; each poller keeps its own budget.
package spin

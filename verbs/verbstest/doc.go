// Package verbstest is the contract suite every verbs provider must pass:
// the soft provider (verbs/soft) in every profile and transport, and the
// cgo ibverbs provider on Soft-RoCE or hardware.
//
// A provider's test calls Run with a constructor of Env, called once per
// subtest: two providers (or one used for both sides) and an address the
// server side listens on. Optional hooks in Env expose provider-specific
// observations (READ depth, RNR NAKs) and fault injection; tests that need
// a missing hook or a capability the device lacks are skipped with the
// reason.
//
// The suite asserts what every conforming RC implementation guarantees and
// accepts the variants the IB specification and ibv_poll_cq(3) leave open
// (a bad lkey is WCLocProtErr or WCLocQPOpErr; a SEND into a too short
// receive is WCLocLenErr or WCLocQPOpErr at the receiver and WCRemInvReqErr
// or WCRemOpErr at the sender), and checks no more than Soft-RoCE does
// where it deviates (a receive posted to a QP in error is not flushed; a
// requester never notices its peer's QP error). RunReference
// holds the soft provider's exact choices in those places, so that soft
// stays a faithful double; only soft runs it.
//
// # Buffer lifetimes
//
// Test buffers are anonymous mmap regions (outside the Go heap, as the
// ibverbs provider requires). They are unmapped by the test's cleanup after
// every ID, QP, MR, CQ and PD the test created has been closed.
//
// # Concurrency
//
// Each test drives both sides from the test goroutine; the only extra
// goroutine is the one blocked in Connect while the test accepts. Waits use
// CompletionQueue notifications with a context deadline as a safety net,
// never sleeps.
package verbstest

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

// Package verifyload is test support: a verifying block load and a path
// waiter shared by the session tests of initiator and the NBD tests of
// test/guest. It is an ordinary package so that those test packages can
// share it, but nothing outside tests imports it.
//
// A Load runs workers that each own a region of Slots blocks, write a block
// with a new version, read it back at once, and record the acknowledged
// content per offset; any error or mismatch fails the test. Finish stops the
// workers and re-reads every acknowledged block. WaitOps waits, without
// polling, until the workers complete more operations. WaitPath waits for an
// initiator.Session path state.
//
// Ownership: a Load belongs to the test that started it; Start, WaitOps and
// Finish are called from that test's goroutine (WaitOps uses t.Fatalf), Ops
// from any goroutine. Each worker writes a freshly allocated buffer that the
// Load keeps as the acknowledged content; the targets never retain buffers
// past a call. The targets are the caller's: the Load never closes them.
package verifyload

// Package testproc is test support: it builds this module's commands and
// runs them as child processes for the process-level tests under test/
// (test/e2e, test/cluster, test/guest). It is an ordinary package so that
// those test packages can share it, but nothing outside tests imports it.
//
// BuildGoBinary builds a main package once per test process and returns the
// executable's path; FreePort picks a loopback port that was free a moment
// ago; Daemon runs a command whose stderr is a JSON (slog) log, keeps that
// log, waits for log lines, signals, kills and waits for the process.
//
// Ownership: a Daemon belongs to the test that made it with New and is used
// from that test's goroutine, except Log, which any goroutine may call. Its
// cleanup (registered by New) kills a process still running when the test
// ends and, if the test failed, logs everything the process wrote. The
// Records returned by WaitLog are copies owned by the caller.
package testproc

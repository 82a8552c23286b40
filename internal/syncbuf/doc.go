// Package syncbuf is a bytes.Buffer that several goroutines may use at
// once: the log sink of tests that read what a component logged while
// its goroutines still write (slog handlers, an exec'd process's output
// copier). It owns no goroutines; String returns a copy.
package syncbuf

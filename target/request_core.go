package target

// requestCore is the core's private per-request state (placeholder until
// the core lands).
type requestCore struct{}

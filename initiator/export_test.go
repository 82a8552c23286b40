package initiator

// WithTestHooks returns o with background-goroutine observers installed
// (for the external end-to-end tests). rescanned is called after each
// namespace rescan caused by an asynchronous event, keptAlive after each
// Keep Alive; either may be nil.
func WithTestHooks(o Options, rescanned, keptAlive func(error)) Options {
	o.hooks = &testHooks{rescanned: rescanned, keptAlive: keptAlive}
	return o
}

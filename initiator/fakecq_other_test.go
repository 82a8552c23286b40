//go:build !linux

package initiator

// Off Linux the fake CQ is never detached (no eventfd): nothing to signal.
func (c *fakeCQ) signalFDLocked() {}

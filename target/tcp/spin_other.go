//go:build !linux

package tcp

// spinState: no spinning where there is no parked set (internal/nbsys).
type spinState struct{ parked bool }

func (s *spinState) init(limit int, fd uintptr) {}
func (s *spinState) woke()                      {}
func (r *sockReader) spin(fd uintptr) bool      { return false }
func parkedOut(fd uintptr, out bool) bool       { return false }

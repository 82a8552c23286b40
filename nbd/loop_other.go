//go:build !linux

package nbd

import "net"

// loop exists on Linux only (loop_linux.go); elsewhere no connection has one.
type loop struct{ deferring bool }

func startLoop(*conn) *loop                       { return nil }
func (*loop) poke()                               {}
func (*loop) Read([]byte) (int, error)            { panic("nbd: no poll loop on this system") }
func (*loop) takeSlot() int32                     { panic("nbd: no poll loop on this system") }
func (*loop) stop()                               {}
func holdConn(net.Conn) (release func(), ok bool) { return func() {}, true }

func (s *Server) adopt(net.Conn) net.Conn { return nil }
func (s *Server) unadopt(net.Conn)        {}

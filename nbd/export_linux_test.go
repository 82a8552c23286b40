package nbd

import "net"

// NewSockConn serves fd by descriptor, as AttachKernel does its sockets.
func NewSockConn(fd int) (net.Conn, error) {
	c, err := newSockConn(fd)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// IdleSleeps is how many sleeps the poll loops made without their P.
func IdleSleeps() uint64 { return idleSleeps.Load() }

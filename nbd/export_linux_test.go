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

package testproc

import (
	"net"
	"testing"
)

// FreePort returns a loopback TCP address ("127.0.0.1:port") whose port was
// free a moment ago, for a daemon that must keep its address across a
// restart (so it cannot listen on :0). Another process may take the port
// in between; tests accept that small risk.
func FreePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

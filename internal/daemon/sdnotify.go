package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
)

// Notify sends state (e.g. "READY=1", "STOPPING=1", "STATUS=…") to the
// service manager over the unix datagram socket named by $NOTIFY_SOCKET,
// as sd_notify(3) does: a path, or an abstract socket when it starts with
// '@'. Without NOTIFY_SOCKET (not run by systemd with Type=notify) it does
// nothing and returns nil. Called from the main goroutine; it blocks only
// for one datagram send.
func Notify(state string) error {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil
	}
	if path[0] != '/' && path[0] != '@' {
		return fmt.Errorf("sd_notify: NOTIFY_SOCKET %q: want a path or an @abstract name", path)
	}
	addr := &net.UnixAddr{Name: path, Net: "unixgram"}
	if path[0] == '@' {
		addr.Name = "\x00" + path[1:]
	}
	c, err := net.DialUnix("unixgram", nil, addr)
	if err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	defer c.Close()
	n, err := c.Write([]byte(state))
	if err == nil && n != len(state) {
		err = errors.New("short write")
	}
	if err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	return nil
}

package daemon

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestNotify(t *testing.T) {
	t.Run("NoSocket", func(t *testing.T) {
		t.Setenv("NOTIFY_SOCKET", "")
		if err := Notify("READY=1"); err != nil {
			t.Fatal(err)
		}
	})
	for _, tc := range []struct{ name, env, bind string }{
		{"Path", filepath.Join(t.TempDir(), "n.sock"), ""},
		{"Abstract", fmt.Sprintf("@rdmablk-test-%d", os.Getpid()), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.env
			if name[0] == '@' {
				name = "\x00" + name[1:]
			}
			c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			t.Setenv("NOTIFY_SOCKET", tc.env)
			if err := Notify("READY=1\nSTATUS=ok"); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, err := c.Read(buf)
			if err != nil || string(buf[:n]) != "READY=1\nSTATUS=ok" {
				t.Fatalf("received %q, %v", buf[:n], err)
			}
		})
	}
	t.Run("BadSocketName", func(t *testing.T) {
		t.Setenv("NOTIFY_SOCKET", "relative")
		if err := Notify("READY=1"); err == nil {
			t.Fatal("relative NOTIFY_SOCKET accepted")
		}
	})
}

package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/verbs/netns"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// Options.NetNS: resources are created through the namespace wrapper (here
// the process's own namespace, which every host may enter), and an unknown
// namespace fails Connect with netns.ErrNotFound.
func TestE2ENetNS(t *testing.T) {
	e := newEnv(t, envConfig{profile: soft.ProfileDefault})
	o := e.opts()
	o.NetNS = "/proc/self/ns/net"
	c := e.connect(t, o)
	if len(c.Namespaces()) == 0 {
		t.Fatal("no namespaces through the netns wrapper")
	}
	o.NetNS = "rdmablk-no-such-netns"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := initiator.Connect(ctx, e.addr, subNQN, o); !errors.Is(err, netns.ErrNotFound) {
		t.Fatalf("Connect in an unknown namespace: %v, want netns.ErrNotFound", err)
	}
}

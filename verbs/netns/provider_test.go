package netns_test

import (
	"testing"

	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/netns"
	"github.com/rdmablk/rdmablk/verbs/soft"
	"github.com/rdmablk/rdmablk/verbs/verbstest"
)

// The wrapper must be transparent: the contract suite passes through it
// (entering the process's own namespace, which every test host allows).
func TestProviderWrapperPassesSuite(t *testing.T) {
	verbstest.Run(t, func(t *testing.T) verbstest.Env {
		fab := soft.NewFabric()
		server := soft.New(soft.Options{Fabric: fab})
		client := soft.New(soft.Options{Fabric: fab, DeviceName: "soft-host"})
		t.Cleanup(func() {
			client.Close()
			server.Close()
		})
		return verbstest.Env{
			Server:        netns.Provider(server, "/proc/self/ns/net"),
			Client:        netns.Provider(client, "/proc/self/ns/net"),
			Addr:          "target.fabric:0",
			InjectQPError: soft.InjectQPError,
		}
	})
}

func TestProviderEmptyNameIsIdentity(t *testing.T) {
	p := soft.New(soft.Options{})
	defer p.Close()
	if got := netns.Provider(p, ""); got != verbs.Provider(p) {
		t.Fatalf("Provider(p, \"\") wrapped p")
	}
}

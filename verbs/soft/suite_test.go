package soft_test

import (
	"context"
	"testing"

	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/soft"
	"github.com/rdmablk/rdmablk/verbs/verbstest"
)

// softEnv builds a suite environment: two providers of prof, on a fresh
// Fabric or over TCP on loopback.
func softEnv(prof soft.Profile, tcp bool) func(t *testing.T) verbstest.Env {
	return func(t *testing.T) verbstest.Env {
		var fab *soft.Fabric
		addr := "127.0.0.1:0"
		if !tcp {
			fab = soft.NewFabric()
			addr = "target.fabric:0"
		}
		server := soft.New(soft.Options{Profile: prof, Fabric: fab})
		client := soft.New(soft.Options{Profile: prof, Fabric: fab, DeviceName: prof.DeviceName + "-host"})
		t.Cleanup(func() {
			client.Close()
			server.Close()
		})
		return verbstest.Env{
			Server: server, Client: client, Addr: addr,
			InjectQPError: soft.InjectQPError,
			ReadsHighWater: func(qp verbs.QueuePair) (int, error) {
				s, err := soft.Stats(qp)
				return s.ReadsOutstandingMax, err
			},
			AwaitRNR: func(ctx context.Context, qp verbs.QueuePair, n uint64) error {
				return soft.AwaitRNR(ctx, qp, n)
			},
		}
	}
}

func TestSuiteDefaultFabric(t *testing.T) { verbstest.Run(t, softEnv(soft.ProfileDefault, false)) }
func TestSuiteDefaultTCP(t *testing.T)    { verbstest.Run(t, softEnv(soft.ProfileDefault, true)) }
func TestSuitePVRDMAFabric(t *testing.T)  { verbstest.Run(t, softEnv(soft.ProfilePVRDMA, false)) }

// One provider serving both sides of every connection.
func TestSuiteSingleProvider(t *testing.T) {
	verbstest.Run(t, func(t *testing.T) verbstest.Env {
		p := soft.New(soft.Options{Fabric: soft.NewFabric()})
		t.Cleanup(func() { p.Close() })
		return verbstest.Env{Server: p, Client: p, Addr: "loop:4420", InjectQPError: soft.InjectQPError}
	})
}

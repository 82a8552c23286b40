package soft_test

import (
	"context"
	"runtime"
	"testing"
	"time"

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
		base := runtime.NumGoroutine()
		server := soft.New(soft.Options{Profile: prof, Fabric: fab})
		client := soft.New(soft.Options{Profile: prof, Fabric: fab, DeviceName: prof.DeviceName + "-host"})
		t.Cleanup(func() {
			client.Close()
			server.Close()
			checkGoroutines(t, base)
		})
		return verbstest.Env{
			Server: server, Client: client, Addr: addr,
			InjectQPError: soft.InjectQPError,
			// Soft fails the next request at once (no retry timer).
			PeerErrorTimeout:       10 * time.Second,
			RemoteInvalidateUserMR: true,
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

// The reference tests pin soft's exact choices where hardware and rxe vary.
func TestReferenceDefaultFabric(t *testing.T) {
	verbstest.RunReference(t, softEnv(soft.ProfileDefault, false))
}
func TestReferenceDefaultTCP(t *testing.T) {
	verbstest.RunReference(t, softEnv(soft.ProfileDefault, true))
}
func TestReferencePVRDMAFabric(t *testing.T) {
	verbstest.RunReference(t, softEnv(soft.ProfilePVRDMA, false))
}

// One provider serving both sides of every connection.
func TestSuiteSingleProvider(t *testing.T) {
	verbstest.Run(t, func(t *testing.T) verbstest.Env {
		p := soft.New(soft.Options{Fabric: soft.NewFabric()})
		t.Cleanup(func() { p.Close() })
		return verbstest.Env{Server: p, Client: p, Addr: "loop:4420", InjectQPError: soft.InjectQPError,
			PeerErrorTimeout: 10 * time.Second, RemoteInvalidateUserMR: true}
	})
}

// checkGoroutines fails the test if more goroutines run than before it
// started. Provider.Close waits for every goroutine it started, so only
// runtime helpers that are already exiting may need a moment.
func checkGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutine leak: %d running, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
	}
}

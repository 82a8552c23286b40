package main

import (
	"fmt"
	"testing"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/providers"
)

// fakeIB stands in for the ibverbs provider: only its name matters to
// withOptions, the dial function decides what reaching the target does.
type fakeIB struct {
	verbs.Provider
	closed bool
}

func (f *fakeIB) Name() string { return "ibverbs" }
func (f *fakeIB) Close() error { f.closed = true; return nil }

// ibOpen is what the registered fake "ibverbs" factory returns.
var ibOpen func() (verbs.Provider, error)

func init() {
	providers.Register("ibverbs", func(string, []string) (verbs.Provider, error) { return ibOpen() })
}

func TestAutoProviderChoice(t *testing.T) {
	errNVMe := &initiator.ConnectRejectedError{QID: 0, Status: 1}
	cases := []struct {
		name     string
		provider string
		noDevice bool
		ibErr    error    // dial's result over ibverbs
		want     []string // providers dialled, in order
		wantErr  bool     // dial's ibverbs error comes back unchanged
	}{
		{"IBReaches", "auto", false, nil, []string{"ibverbs"}, false},
		{"NoDevice", "auto", true, nil, []string{"soft"}, false},
		{"Unreachable", "auto", false, fmt.Errorf("resolve: %w", verbs.ErrUnreachable), []string{"ibverbs", "soft"}, false},
		{"ProviderReject", "auto", false, fmt.Errorf("connect: %w", &verbs.RejectError{}), []string{"ibverbs", "soft"}, false},
		{"NVMeReject", "auto", false, errNVMe, []string{"ibverbs"}, true},
		{"ConsumerReject", "auto", false, &verbs.RejectError{Consumer: true}, []string{"ibverbs"}, true},
		{"NVMeStatus", "auto", false, fmt.Errorf("connect: %w", initiator.ErrProtocol), []string{"ibverbs"}, true},
		{"ExplicitIBNoFallback", "ibverbs", false, verbs.ErrUnreachable, []string{"ibverbs"}, true},
		{"ExplicitSoft", "soft", false, nil, []string{"soft"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ib := &fakeIB{}
			ibOpen = func() (verbs.Provider, error) {
				if tc.noDevice {
					return nil, fmt.Errorf("ibv_get_device_list: %w", verbs.ErrNoDevice)
				}
				return ib, nil
			}
			g := &globals{provider: tc.provider, profile: "default"}
			var used []string
			err := g.withOptions(func(opts initiator.Options) error {
				name := opts.Provider.Name()
				used = append(used, name)
				if name == "ibverbs" {
					return tc.ibErr
				}
				if c, ok := opts.Provider.(interface{ Close() error }); ok {
					c.Close()
				}
				return nil
			})
			if fmt.Sprint(used) != fmt.Sprint(tc.want) {
				t.Fatalf("dialled %v, want %v", used, tc.want)
			}
			var want error
			if tc.wantErr {
				want = tc.ibErr
			}
			if err != want {
				t.Fatalf("withOptions: %v, want %v", err, want)
			}
			if fell := len(tc.want) == 2; ib.closed != fell {
				t.Fatalf("ibverbs provider closed %v, want %v", ib.closed, fell)
			}
		})
	}
}

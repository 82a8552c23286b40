// Package providers selects a verbs provider by name ("auto", "soft",
// "ibverbs") for the daemon and the CLI. Providers built behind tags
// register themselves from init functions.
package providers

import (
	"fmt"
	"sort"
	"sync"

	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// Factory opens a verbs provider. listenAddrs lets a factory check
// that one of its devices serves the addresses (ibverbs); profile is the
// soft capability profile.
type Factory func(profile string, listenAddrs []string) (verbs.Provider, error)

var (
	providersMu sync.Mutex
	providers   = map[string]Factory{
		"soft": func(profile string, _ []string) (verbs.Provider, error) {
			p, err := soft.ProfileByName(profile)
			if err != nil {
				return nil, err
			}
			return soft.New(soft.Options{Profile: p}), nil
		},
	}
)

// Register makes a provider selectable by name (the ibverbs
// provider registers itself when built with -tags ibverbs).
func Register(name string, f Factory) {
	providersMu.Lock()
	defer providersMu.Unlock()
	providers[name] = f
}

// Names lists the providers compiled in.
func Names() []string {
	providersMu.Lock()
	defer providersMu.Unlock()
	var names []string
	for n := range providers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Open opens the named provider. "auto" tries ibverbs when it is
// compiled in and a device serves the listen addresses, and falls back to
// soft; the returned reason says which was chosen and why.
func Open(name, profile string, listenAddrs []string) (p verbs.Provider, reason string, err error) {
	providersMu.Lock()
	f, ok := providers[name]
	ib, haveIB := providers["ibverbs"]
	sf := providers["soft"]
	providersMu.Unlock()
	if name != "auto" {
		if !ok {
			return nil, "", fmt.Errorf("verbs provider %q is not compiled in (have %v)", name, Names())
		}
		p, err := f(profile, listenAddrs)
		if err != nil {
			return nil, "", fmt.Errorf("verbs provider %s: %w", name, err)
		}
		return p, "configured", nil
	}
	if haveIB {
		p, err := ib(profile, listenAddrs)
		if err == nil {
			return p, "auto: RDMA device serves the listen address", nil
		}
		reason = "auto: ibverbs unavailable (" + err.Error() + "), using soft"
	} else {
		reason = "auto: built without ibverbs, using soft"
	}
	p, err = sf(profile, listenAddrs)
	if err != nil {
		return nil, "", err
	}
	return p, reason, nil
}

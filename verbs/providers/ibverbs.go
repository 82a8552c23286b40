//go:build ibverbs

package providers

import (
	"fmt"

	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/ibverbs"
	"github.com/rdmablk/rdmablk/verbs/rdmadev"
)

// The ibverbs provider (build tag ibverbs). With listen addresses, it
// refuses unless an active RDMA port has a RoCE v2 GID for each of them
// (or the address is unspecified), so that "auto" falls back to soft with
// the reason; without addresses (the initiator) it needs only a device.
func init() {
	Register("ibverbs", func(_ string, listenAddrs []string) (verbs.Provider, error) {
		if len(listenAddrs) > 0 {
			devs, err := rdmadev.List()
			if err != nil {
				return nil, fmt.Errorf("%w: %v", verbs.ErrNoDevice, err)
			}
			if _, err := rdmadev.Serves(devs, listenAddrs); err != nil {
				return nil, err
			}
		}
		return ibverbs.New(ibverbs.Options{})
	})
}

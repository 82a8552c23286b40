package attach

import (
	"fmt"

	"github.com/rdmablk/rdmablk/initiator"
)

// setNetNS applies a network namespace to opts.
func setNetNS(opts *initiator.Options, ns string) error {
	if ns == "" {
		return nil
	}
	return fmt.Errorf("attach: --netns %q: this build's initiator has no network namespace support yet", ns)
}

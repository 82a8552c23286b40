package attach

import "github.com/rdmablk/rdmablk/initiator"

// setNetNS runs the attachment's RDMA resources (every path's CM IDs, PD,
// CQs and QPs) in network namespace ns (initiator.Options.NetNS; with
// `rdma system set netns exclusive` the RDMA device must have been moved
// there: `rdma dev set DEV netns NAME`).
func setNetNS(opts *initiator.Options, ns string) error {
	if ns != "" {
		opts.NetNS = ns
	}
	return nil
}

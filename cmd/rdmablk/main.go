// Command rdmablk is the rdmablk initiator and admin CLI: it discovers
// and identifies NVMe-oF subsystems over RDMA or NVMe/TCP, reads and
// writes namespaces, and benchmarks them.
//
//	rdmablk discover -a 127.0.0.1
//	rdmablk identify -a 127.0.0.1
//	rdmablk write -a 127.0.0.1 --offset 0 -i data.bin
//	rdmablk read  -a 127.0.0.1 --offset 0 --length 1M -o out.bin
//	rdmablk bench -a 127.0.0.1 --rw read --pattern rand --bs 4k --qd 32 --jobs 2 --runtime 10s
//	rdmablk discover -t tcp -a 127.0.0.1          # NVMe/TCP discovery on 8009
//	rdmablk bench -t tcp -a 127.0.0.1 --hdr-digest --data-digest
//
// As nvme-cli: -a/--traddr, -s/--trsvcid (default 4420; over -t tcp a
// discovery controller is looked for on 8009), -n/--nqn, -t/--transport
// (rdma, the default, or tcp), -g/--hdr-digest and -G/--data-digest
// (NVMe/TCP CRC32C digests),
// --hostnqn/--hostid (default /etc/nvme/hostnqn and /etc/nvme/hostid, see
// hostid.go). Without --nqn a command connects to the first NVM subsystem
// of the discovery log at -a, at the address its record names. --json
// output uses snake_case keys and enumeration names (jsonout.go).
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "rdmablk:", err)
		os.Exit(1)
	}
}

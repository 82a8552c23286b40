package nvme

import (
	"testing"
	"unsafe"
)

// TestSizes pins the wire sizes of every structure.
func TestSizes(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"SQESize", SQESize, 64},
		{"sizeof(SQE)", int(unsafe.Sizeof(SQE{})), 64},
		{"CQESize", CQESize, 16},
		{"sizeof(CQE)", int(unsafe.Sizeof(CQE{})), 16},
		{"SGLDescSize", SGLDescSize, 16},
		{"sizeof(SGL)", int(unsafe.Sizeof(SGL{})), 16},
		{"ConnectDataSize", ConnectDataSize, 1024},
		{"NQNSize", NQNSize, 256},
		{"MaxNQNLength", MaxNQNLength, 223},
		{"IdentifySize", IdentifySize, 4096},
		{"NSListMax", NSListMax, 1024},
		{"DiscoveryLogHeaderSize", DiscoveryLogHeaderSize, 1024},
		{"DiscoveryLogEntrySize", DiscoveryLogEntrySize, 1024},
		{"DiscoveryLogSize(0)", DiscoveryLogSize(0), 1024},
		{"DiscoveryLogSize(3)", DiscoveryLogSize(3), 4096},
		{"DiscoveryLogSize(-1)", DiscoveryLogSize(-1), 1024},
		{"TSASSize", TSASSize, 256},
		{"SMARTLogSize", SMARTLogSize, 512},
		{"ErrorLogEntrySize", ErrorLogEntrySize, 64},
		{"FirmwareSlotLogSize", FirmwareSlotLogSize, 512},
		{"CommandsEffectsLogSize", CommandsEffectsLogSize, 4096},
		{"ChangedNSListSize", ChangedNSListSize, 4096},
		{"ANALogHeaderSize", ANALogHeaderSize, 16},
		{"ANAGroupDescSize", ANAGroupDescSize, 32},
		{"CMRequestSize", CMRequestSize, 32},
		{"CMAcceptSize", CMAcceptSize, 32},
		{"CMRejectSize", CMRejectSize, 4},
		{"DSMRangeSize", DSMRangeSize, 16},
		{"MaxKeyedSGLLength", MaxKeyedSGLLength, 1<<24 - 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

package soft

import (
	"fmt"

	"github.com/rdmablk/rdmablk/verbs"
)

// Profile is a device capability profile: the attributes a soft device
// reports and enforces.
type Profile struct {
	// Name is the profile name accepted by ProfileByName.
	Name string
	// DeviceName is the device name used when Options.DeviceName is empty.
	DeviceName string
	// Attr is reported by Device.Attr and enforced at create and post time.
	Attr verbs.DeviceAttr
	// MaxMRPages, when non-zero, limits a registration to this many 4 KiB
	// pages spanned (PVRDMA's page directory: 512×512 pages = 1 GiB).
	// Registrations spanning more fail with verbs.ErrInvalid.
	MaxMRPages int
}

// ProfileDefault resembles Soft-RoCE (rxe) / mlx5: deep queues, many SGEs,
// inline data, SRQ and SEND_WITH_INV.
var ProfileDefault = Profile{
	Name:       "default",
	DeviceName: "soft0",
	Attr: verbs.DeviceAttr{
		FWVersion:       "0.0.0",
		VendorID:        0xffffff,
		VendorPartID:    0,
		MaxMRSize:       1 << 46,
		MaxQP:           1 << 16,
		MaxQPWR:         16384,
		MaxSGE:          32,
		MaxSGERd:        30,
		MaxCQ:           1 << 16,
		MaxCQE:          1 << 22,
		MaxMR:           1 << 18,
		MaxPD:           1 << 16,
		MaxQPRdAtom:     16,
		MaxQPInitRdAtom: 16,
		MaxInlineData:   256,
		MaxSRQ:          1 << 16,
		NumCompVectors:  4,
		Caps: verbs.CapMemMgtExtensions | verbs.CapSendWithInv | verbs.CapUserFastReg |
			verbs.CapSRQ | verbs.CapRNRNakGen,
	},
}

// ProfilePVRDMA is the VMware PVRDMA device as a guest's userspace sees it
// (anchors §5): max_qp_wr 1024, 16 SGEs, no inline data, no SRQ, no
// userspace SEND_WITH_INV or fast registration, one completion vector, user
// MRs of at most 262,144 pages (1 GiB).
var ProfilePVRDMA = Profile{
	Name:       "pvrdma",
	DeviceName: "vmw_pvrdma0",
	Attr: verbs.DeviceAttr{
		FWVersion:       "3.0.000",
		VendorID:        0x15ad,
		VendorPartID:    0x0820,
		MaxMRSize:       1 << 32,
		MaxQP:           32768,
		MaxQPWR:         1024,
		MaxSGE:          16,
		MaxSGERd:        16,
		MaxCQ:           4096,
		MaxCQE:          262144,
		MaxMR:           262144,
		MaxPD:           32768,
		MaxQPRdAtom:     16,
		MaxQPInitRdAtom: 16,
		MaxInlineData:   0,
		MaxSRQ:          0,
		NumCompVectors:  1,
		Caps:            verbs.CapMemMgtExtensions | verbs.CapRNRNakGen,
	},
	MaxMRPages: 512 * 512,
}

// ProfileByName returns the profile called name ("default" or "pvrdma").
func ProfileByName(name string) (Profile, error) {
	switch name {
	case ProfileDefault.Name:
		return ProfileDefault, nil
	case ProfilePVRDMA.Name:
		return ProfilePVRDMA, nil
	}
	return Profile{}, fmt.Errorf("%w: unknown soft profile %q", verbs.ErrInvalid, name)
}

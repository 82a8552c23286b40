package target

import (
	"sort"

	"github.com/rdmablk/rdmablk/nvme"
)

// Identify Controller constants of this implementation.
const (
	// vendorID is Identify VID and SSVID: 0, as Linux nvmet reports (no
	// PCI vendor owns a fabrics target; hosts key nothing off it). IEEE
	// (the OUI) is likewise left zero.
	vendorID = 0
	// minPageShift is log2 of CAP.MPSMIN (4 KiB), the MDTS unit.
	minPageShift = 12
	// nsidBroadcast is the all-namespaces NSID.
	nsidBroadcast = 0xFFFFFFFF
)

// mdts encodes a transfer limit in bytes as Identify MDTS: the largest m
// with 2^m × 4 KiB ≤ maxBytes. m = 0 would mean "no limit", so AddPort
// insists on at least 8 KiB.
func mdts(maxBytes int) uint8 {
	m := uint8(0)
	for m < 30 && uint64(1)<<(minPageShift+m+1) <= uint64(maxBytes) {
		m++
	}
	return m
}

// identify handles Identify (CNS 00h-03h).
func (c *Controller) identify(r *Request) nvme.Status {
	b, st := dataIn(r, nvme.IdentifySize)
	if st != nvme.StatusSuccess {
		return st
	}
	switch (nvme.IdentifyCmd{SQE: &r.SQE}).CNS() {
	case nvme.CNSController:
		return c.identifyController(b)
	case nvme.CNSNamespace:
		return c.identifyNamespace(b, r.SQE.NSID())
	case nvme.CNSActiveNSList:
		return c.identifyActiveNS(b, r.SQE.NSID())
	case nvme.CNSNSDescList:
		return c.identifyDescriptors(b, r.SQE.NSID())
	default:
		return nvme.StatusInvalidField.WithDNR()
	}
}

// identifyController fills the Identify Controller data structure.
func (c *Controller) identifyController(b []byte) nvme.Status {
	caps := &c.port.Caps
	id := nvme.IdentifyController{
		VID:    vendorID,
		SSVID:  vendorID,
		SN:     c.subsys.serial,
		MN:     c.subsys.model,
		FR:     c.t.opts.FirmwareRevision,
		RAB:    6,
		CMIC:   nvme.CMICMultiCtrl,
		MDTS:   mdts(caps.MaxDataTransfer),
		CNTLID: c.id,
		VER:    nvme.VS13,
		// NVMe-oF requires the 128-bit host identifier (Get Features
		// Host Identifier returns it); nvmet reports the bit too.
		CTRATT: nvme.CTRATTHostID128,
		ACL:    3,
		AERL:   aerLimit - 1,
		FRMW:   1<<0 | 1<<1, // slot 1 read-only, one slot
		LPA:    nvme.LPACommandsEffects | nvme.LPAExtendedData,
		ELPE:   0, // one (always empty) error log entry
		KAS:    1, // 100 ms granularity
		MAXCMD: uint16(min(caps.MaxQueueDepth, 0xFFFF)),
		SGLS:   caps.sgls(),
		SubNQN: c.subsys.nqn,
		IOCCSZ: caps.ioccsz(),
		IORCSZ: caps.iorcsz(),
		ICDOFF: uint16(caps.InCapsuleDataOffset),
		FCATT:  0, // dynamic controller model
		MSDBD:  uint8(max(caps.MaxSGLDescriptors, 1)),
	}
	if c.discovery {
		id.CNTRLTYPE = nvme.CntrlTypeDiscovery
		id.OAES = nvme.OAESDiscoveryChange
		id.LPA = nvme.LPAExtendedData
	} else {
		id.CNTRLTYPE = nvme.CntrlTypeIO
		id.OAES = nvme.OAESNSAttr | nvme.OAESANAChange
		// ANA reporting (ana.go): every state, groups 1..MaxANAGroup.
		id.CMIC |= nvme.CMICANA
		id.ANATT = anaTransitionTime
		id.ANACAP = nvme.ANACAPOptimized | nvme.ANACAPNonOptimized | nvme.ANACAPInaccessible |
			nvme.ANACAPPersistentLoss | nvme.ANACAPChange
		id.ANAGRPMAX = MaxANAGroup
		id.NANAGRPID = MaxANAGroup
		// MNAN must be non-zero and ≤ NN when CMIC reports ANA: Linux
		// (nvme_mpath_init_identify) refuses the controller otherwise
		// ("Invalid MNAN value 0", connect fails with EINVAL). Every
		// NSID up to NN may be attached here, as with nvmet.
		id.MNAN = MaxNSID
		id.SQES = 0x66
		id.CQES = 0x44
		id.NN = MaxNSID
		id.ONCS = nvme.ONCSDSM | nvme.ONCSWriteZeroes
		id.VWC = nvme.VWCPresent
	}
	if err := id.Marshal(b); err != nil {
		return nvme.StatusInternalError
	}
	return nvme.StatusSuccess
}

// identifyNamespace fills Identify Namespace. An NSID in 1..MaxNSID that
// is not attached yields zeroes (an inactive namespace, as the spec and
// nvmet say); 0, the broadcast NSID and larger ones are Invalid Namespace.
func (c *Controller) identifyNamespace(b []byte, nsid uint32) nvme.Status {
	if nsid == 0 || nsid > MaxNSID {
		return nvme.StatusInvalidNamespace.WithDNR()
	}
	n := c.subsys.ns.Load().get(nsid)
	if n == nil {
		clear(b)
		return nvme.StatusSuccess
	}
	blocks := n.backend.Blocks()
	id := nvme.IdentifyNamespace{
		NSZE:  blocks,
		NCAP:  blocks,
		NUSE:  blocks,
		NLBAF: 0,
		FLBAS: 0,
		NMIC:  nvme.NMICShared,
		NGUID: n.nguid,
		EUI64: n.eui64,
		// ANAGRPID: CMIC bit 3 is set, so every namespace names its group.
		ANAGRPID: n.anaGroup,
	}
	id.LBAF[0] = nvme.LBAFormat{LBADS: n.shift}
	if n.readOnly {
		id.NSATTR = 1 // currently write protected
	}
	if err := id.Marshal(b); err != nil {
		return nvme.StatusInternalError
	}
	return nvme.StatusSuccess
}

// identifyActiveNS fills the active namespace list: NSIDs greater than
// nsid, ascending, at most 1024.
func (c *Controller) identifyActiveNS(b []byte, nsid uint32) nvme.Status {
	if nsid >= 0xFFFFFFFE {
		return nvme.StatusInvalidNamespace.WithDNR()
	}
	ids := c.subsys.ns.Load().ids
	i := sort.Search(len(ids), func(i int) bool { return ids[i] > nsid })
	nvme.MarshalNSList(b, ids[i:])
	return nvme.StatusSuccess
}

// identifyDescriptors fills the namespace identification descriptor list
// (NGUID, UUID and EUI-64 when set, and CSI = NVM).
func (c *Controller) identifyDescriptors(b []byte, nsid uint32) nvme.Status {
	n := c.subsys.ns.Load().get(nsid)
	if n == nil {
		return nvme.StatusInvalidNamespace.WithDNR()
	}
	d := make([]nvme.NSDescriptor, 0, 4)
	if n.eui64 != [8]byte{} {
		d = append(d, nvme.NSDescriptor{Type: nvme.NIDTEUI64, ID: n.eui64[:]})
	}
	if n.nguid != [16]byte{} {
		d = append(d, nvme.NSDescriptor{Type: nvme.NIDTNGUID, ID: n.nguid[:]})
	}
	if n.uuid != [16]byte{} {
		d = append(d, nvme.NSDescriptor{Type: nvme.NIDTUUID, ID: n.uuid[:]})
	}
	d = append(d, nvme.NSDescriptor{Type: nvme.NIDTCSI, ID: []byte{0}})
	if err := nvme.MarshalNSDescriptors(b, d); err != nil {
		return nvme.StatusInternalError
	}
	return nvme.StatusSuccess
}

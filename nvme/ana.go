package nvme

import "encoding/binary"

// Asymmetric Namespace Access log page (NVMe base spec 2.0 §5.16.1.12,
// Figures 220-221; LID 0Ch): a 16-byte header (CHGCNT at 0, NGRPS at 8)
// followed by NGRPS group descriptors, each 32 bytes (ANAGRPID at 0,
// NNSIDS at 4, CHGCNT at 8, ANA state at 16 bits 3:0) plus NNSIDS 4-byte
// NSIDs in increasing order.

// ANA log sizes.
const (
	ANALogHeaderSize  = 16
	ANAGroupDescSize  = 32 // without the NSID list
	ANAMaxGroups      = 0xFFFF
	anaDescGroupIDOff = 0
	anaDescNNSIDsOff  = 4
	anaDescChgCntOff  = 8
	anaDescStateOff   = 16
)

// ANA states.
const (
	ANAStateOptimized      = 0x1
	ANAStateNonOptimized   = 0x2
	ANAStateInaccessible   = 0x3
	ANAStatePersistentLoss = 0x4
	ANAStateChange         = 0xF
)

// ANAGroupDescriptor is one ANA group descriptor. NSIDs is empty when the
// log was read with ANALSPRGO (groups only).
type ANAGroupDescriptor struct {
	GroupID     uint32
	ChangeCount uint64
	State       uint8 // ANAState*; 4 bits on the wire
	NSIDs       []uint32
}

// ANALogSize is the size of the ANA log with these groups; rgo (Return
// Groups Only, ANALSPRGO) omits the NSID lists.
func ANALogSize(groups []ANAGroupDescriptor, rgo bool) int {
	n := ANALogHeaderSize + ANAGroupDescSize*len(groups)
	if !rgo {
		for i := range groups {
			n += 4 * len(groups[i].NSIDs)
		}
	}
	return n
}

// MarshalANALog writes an ANA log page (header CHGCNT chgcnt, then one
// descriptor per group; with rgo the NSID lists are left out and NNSIDS is
// 0) at the start of b, zeroing all of b beyond it, and returns the log
// size. It returns ErrTooMany (more than ANAMaxGroups groups, or more than
// 2^32-1 NSIDs in a group) or ErrShort (b shorter than ANALogSize), with b
// unchanged.
func MarshalANALog(b []byte, chgcnt uint64, groups []ANAGroupDescriptor, rgo bool) (int, error) {
	if len(groups) > ANAMaxGroups {
		return 0, ErrTooMany
	}
	for i := range groups {
		if uint64(len(groups[i].NSIDs)) > 0xFFFFFFFF {
			return 0, ErrTooMany
		}
	}
	size := ANALogSize(groups, rgo)
	if len(b) < size {
		return 0, ErrShort
	}
	clear(b)
	le := binary.LittleEndian
	le.PutUint64(b[0:], chgcnt)
	le.PutUint16(b[8:], uint16(len(groups)))
	o := ANALogHeaderSize
	for i := range groups {
		g := &groups[i]
		le.PutUint32(b[o+anaDescGroupIDOff:], g.GroupID)
		le.PutUint64(b[o+anaDescChgCntOff:], g.ChangeCount)
		b[o+anaDescStateOff] = g.State & 0xF
		o += ANAGroupDescSize
		if rgo {
			continue
		}
		le.PutUint32(b[o-ANAGroupDescSize+anaDescNNSIDsOff:], uint32(len(g.NSIDs)))
		for _, id := range g.NSIDs {
			le.PutUint32(b[o:], id)
			o += 4
		}
	}
	return size, nil
}

// ParseANALog decodes an ANA log page. It returns ErrShort when b ends
// before the header, a descriptor or an NSID list that the header and
// descriptors announce (so a hostile NNSIDS cannot cause a large
// allocation). Bytes after the last descriptor are ignored. It does not
// retain b.
func ParseANALog(b []byte) (chgcnt uint64, groups []ANAGroupDescriptor, err error) {
	if len(b) < ANALogHeaderSize {
		return 0, nil, ErrShort
	}
	le := binary.LittleEndian
	chgcnt = le.Uint64(b[0:])
	ngrps := int(le.Uint16(b[8:]))
	o := ANALogHeaderSize
	for i := 0; i < ngrps; i++ {
		if len(b)-o < ANAGroupDescSize {
			return chgcnt, groups, ErrShort
		}
		g := ANAGroupDescriptor{
			GroupID:     le.Uint32(b[o+anaDescGroupIDOff:]),
			ChangeCount: le.Uint64(b[o+anaDescChgCntOff:]),
			State:       b[o+anaDescStateOff] & 0xF,
		}
		nn := uint64(le.Uint32(b[o+anaDescNNSIDsOff:]))
		o += ANAGroupDescSize
		if nn > uint64(len(b)-o)/4 {
			return chgcnt, groups, ErrShort
		}
		if nn > 0 {
			g.NSIDs = make([]uint32, nn)
			for j := range g.NSIDs {
				g.NSIDs[j] = le.Uint32(b[o:])
				o += 4
			}
		}
		groups = append(groups, g)
	}
	return chgcnt, groups, nil
}

// ANALogHeader is the ANA log page header (NVMe base spec 2.0 §5.16.1.12,
// Figure 220): bytes 0-7 CHGCNT, 8-9 NGRPS, 10-15 reserved.
type ANALogHeader struct {
	ChangeCount uint64 // CHGCNT
	NumGroups   int    // NGRPS: group descriptors that follow
}

// ParseANALogHeader decodes the first ANALogHeaderSize bytes of b (ErrShort
// when b is shorter). It does not retain b.
func ParseANALogHeader(b []byte) (ANALogHeader, error) {
	if len(b) < ANALogHeaderSize {
		return ANALogHeader{}, ErrShort
	}
	le := binary.LittleEndian
	return ANALogHeader{ChangeCount: le.Uint64(b[0:]), NumGroups: int(le.Uint16(b[8:]))}, nil
}

// DescriptorsSize is the size of the header and NumGroups descriptors
// without their NSID lists (what a read with ANALSPRGO returns).
func (h ANALogHeader) DescriptorsSize() int {
	return ANALogHeaderSize + h.NumGroups*ANAGroupDescSize
}

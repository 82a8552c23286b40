package nvme

import "encoding/binary"

// Namespace lists (NVMe base spec 2.0 §4.4.2 "Namespace List": up to 1024
// NSIDs of 4 bytes, in increasing order, the unused remainder zero) and
// namespace identification descriptors (§5.17.2.3, Figure 278).

// NSListMax is the number of NSIDs a namespace list holds (4096 / 4).
const NSListMax = IdentifySize / 4

// MarshalNSList writes an active namespace list (Identify CNS 02h) into
// b[:min(len(b), IdentifySize)]: the NSIDs in the given order (the caller
// supplies them increasing and greater than the command's NSID), zero
// NSIDs skipped, the rest of the region zeroed. NSIDs that do not fit
// (more than NSListMax, or a shorter b) are dropped: the host pages through
// with a higher starting NSID, as the spec intends.
func MarshalNSList(b []byte, nsids []uint32) {
	b = b[:min(len(b), IdentifySize)]
	clear(b)
	o := 0
	for _, id := range nsids {
		if id == 0 {
			continue
		}
		if o+4 > len(b) {
			break
		}
		binary.LittleEndian.PutUint32(b[o:], id)
		o += 4
	}
}

// ParseNSList decodes a namespace list from b (at most NSListMax entries),
// stopping at the first zero entry. It also decodes the Changed Namespace
// List log page, where a single entry ChangedNSListOverflow means "more
// than 1024 changed". The result is a fresh slice, nil when empty.
func ParseNSList(b []byte) []uint32 {
	n := min(len(b)/4, NSListMax)
	var out []uint32
	for i := 0; i < n; i++ {
		id := binary.LittleEndian.Uint32(b[4*i:])
		if id == 0 {
			break
		}
		out = append(out, id)
	}
	return out
}

// Namespace Identifier Types (NIDT) and their lengths (NIDL).
const (
	NIDTEUI64 = 1 // 8 bytes
	NIDTNGUID = 2 // 16 bytes
	NIDTUUID  = 3 // 16 bytes
	NIDTCSI   = 4 // 1 byte: command set identifier
)

// nsDescHeaderSize is the descriptor header: NIDT, NIDL, 2 reserved bytes.
const nsDescHeaderSize = 4

// NSDescriptor is one namespace identification descriptor. ID is owned by
// the descriptor (parsers copy it out of the buffer).
type NSDescriptor struct {
	Type uint8
	ID   []byte
}

// nidLen is the required NIDL of a known type, or 0 for unknown types.
func nidLen(t uint8) int {
	switch t {
	case NIDTEUI64:
		return 8
	case NIDTNGUID, NIDTUUID:
		return 16
	case NIDTCSI:
		return 1
	}
	return 0
}

// MarshalNSDescriptors writes a namespace identification descriptor list
// (Identify CNS 03h) into b[:IdentifySize], zeroing the remainder (a zero
// header terminates the list). It returns ErrShort when len(b) <
// IdentifySize, ErrBadDescriptor for a zero type, an ID longer than 255
// bytes or of the wrong length for a known type, and ErrTooMany when the
// list exceeds IdentifySize. On error b is unchanged.
func MarshalNSDescriptors(b []byte, d []NSDescriptor) error {
	if len(b) < IdentifySize {
		return ErrShort
	}
	total := 0
	for _, x := range d {
		if x.Type == 0 || len(x.ID) == 0 || len(x.ID) > 255 {
			return ErrBadDescriptor
		}
		if want := nidLen(x.Type); want != 0 && len(x.ID) != want {
			return ErrBadDescriptor
		}
		total += nsDescHeaderSize + len(x.ID)
		if total > IdentifySize {
			return ErrTooMany
		}
	}
	b = b[:IdentifySize]
	clear(b)
	o := 0
	for _, x := range d {
		b[o] = x.Type
		b[o+1] = uint8(len(x.ID))
		copy(b[o+nsDescHeaderSize:], x.ID)
		o += nsDescHeaderSize + len(x.ID)
	}
	return nil
}

// ParseNSDescriptors decodes a namespace identification descriptor list
// from b (at most IdentifySize bytes are examined). The list ends at a
// header with NIDT or NIDL zero, or at the end of the region. A descriptor
// running past the region, or a known type with the wrong length, is
// ErrBadDescriptor; unknown types are returned as they are. IDs are copies.
func ParseNSDescriptors(b []byte) ([]NSDescriptor, error) {
	b = b[:min(len(b), IdentifySize)]
	var out []NSDescriptor
	o := 0
	for o+nsDescHeaderSize <= len(b) {
		t, l := b[o], int(b[o+1])
		if t == 0 || l == 0 {
			break
		}
		if o+nsDescHeaderSize+l > len(b) {
			return out, ErrBadDescriptor
		}
		if want := nidLen(t); want != 0 && l != want {
			return out, ErrBadDescriptor
		}
		id := make([]byte, l)
		copy(id, b[o+nsDescHeaderSize:])
		out = append(out, NSDescriptor{Type: t, ID: id})
		o += nsDescHeaderSize + l
	}
	return out, nil
}

// Changed Namespace List log page (NVMe base spec 2.0 §5.16.1.5; LID 04h):
// the same format as a namespace list, except that when more than 1024
// namespaces changed the first entry is ChangedNSListOverflow and the rest
// are zero.
const (
	ChangedNSListSize     = IdentifySize
	ChangedNSListOverflow = 0xFFFFFFFF
)

// MarshalChangedNSList writes a Changed Namespace List log page into
// b[:min(len(b), ChangedNSListSize)] (the caller passes a full
// ChangedNSListSize buffer; a shorter one is filled as far as it goes).
// More than NSListMax non-zero NSIDs encode the overflow form. Zero NSIDs
// are skipped and the remainder is zeroed.
func MarshalChangedNSList(b []byte, nsids []uint32) {
	n := 0
	for _, id := range nsids {
		if id != 0 {
			n++
		}
	}
	if n > NSListMax {
		b = b[:min(len(b), ChangedNSListSize)]
		clear(b)
		if len(b) >= 4 {
			binary.LittleEndian.PutUint32(b, ChangedNSListOverflow)
		}
		return
	}
	MarshalNSList(b, nsids)
}

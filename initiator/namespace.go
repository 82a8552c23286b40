package initiator

import (
	"fmt"
	"io"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/nvme"
)

// Namespace is an active namespace of a Controller. Its methods are safe
// for concurrent use by any number of goroutines: the blocking I/O methods
// are thin wrappers over Submit, the multiplexed API shared by all
// callers (see the package doc).
type Namespace struct {
	c    *Controller
	nsid uint32
	info atomic.Pointer[nvme.IdentifyNamespace]
}

// NSID is the namespace identifier.
func (ns *Namespace) NSID() uint32 { return ns.nsid }

// Identify returns the latest Identify Namespace data (refreshed when the
// controller reports a namespace change).
func (ns *Namespace) Identify() nvme.IdentifyNamespace { return *ns.info.Load() }

// BlockSize is the logical block size in bytes.
func (ns *Namespace) BlockSize() int { return ns.info.Load().BlockSize() }

// Blocks is the size in logical blocks (NSZE).
func (ns *Namespace) Blocks() uint64 { return ns.info.Load().NSZE }

// Size is the size in bytes.
func (ns *Namespace) Size() int64 {
	id := ns.info.Load()
	return int64(id.NSZE) * int64(id.BlockSize())
}

// checkRange validates a byte range: block aligned, not negative.
func (ns *Namespace) checkRange(off, n int64) (bs int, err error) {
	bs = ns.BlockSize()
	if bs <= 0 {
		return 0, fmt.Errorf("%w: namespace %d has no usable block size", ErrNotSupported, ns.nsid)
	}
	if off < 0 || n < 0 || off%int64(bs) != 0 || n%int64(bs) != 0 {
		return 0, fmt.Errorf("%w: offset %d length %d, block size %d", ErrUnaligned, off, n, bs)
	}
	return bs, nil
}

// outOfRange is the error for a range beyond the namespace.
func (ns *Namespace) outOfRange(op string) error {
	return &StatusError{Op: op, Status: nvme.StatusLBAOutOfRange}
}

// ReadAt implements io.ReaderAt. off and len(p) must be multiples of
// BlockSize (else ErrUnaligned). The read is split at MaxTransfer into
// commands spread over the I/O queues, through registered buffers. A read
// reaching past the end returns the blocks before the end and io.EOF.
func (ns *Namespace) ReadAt(p []byte, off int64) (int, error) {
	_, err := ns.checkRange(off, int64(len(p)))
	if err != nil {
		return 0, err
	}
	size := ns.Size()
	if off >= size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := p
	if int64(len(p)) > size-off {
		want = p[:size-off]
	}
	n, err := blocking(ns, IORead, off, want, 0, false)
	if err == nil && len(want) < len(p) {
		err = io.EOF
	}
	return n, err
}

// WriteAt implements io.WriterAt with the same rules as ReadAt. A write
// reaching past the end fails before anything is written (a *StatusError
// with nvme.StatusLBAOutOfRange).
func (ns *Namespace) WriteAt(p []byte, off int64) (int, error) {
	return ns.write(p, off, false)
}

// WriteFUA writes p at off with Force Unit Access: the data is durable
// when it returns.
func (ns *Namespace) WriteFUA(p []byte, off int64) error {
	_, err := ns.write(p, off, true)
	return err
}

func (ns *Namespace) write(p []byte, off int64, fua bool) (int, error) {
	_, err := ns.checkRange(off, int64(len(p)))
	if err != nil {
		return 0, err
	}
	if off+int64(len(p)) > ns.Size() {
		return 0, ns.outOfRange("write")
	}
	return blocking(ns, IOWrite, off, p, 0, fua)
}

// Flush makes every completed write to the namespace durable.
func (ns *Namespace) Flush() error {
	_, err := blocking(ns, IOFlush, 0, nil, 0, false)
	return err
}

// Deallocate deallocates (trims) length bytes at off (block aligned) with
// Dataset Management. ErrNotSupported when ONCS lacks DSM.
func (ns *Namespace) Deallocate(off, length int64) error {
	return ns.rangeOp(IODeallocate, nvme.ONCSDSM, off, length)
}

// WriteZeroes zeroes length bytes at off (block aligned). ErrNotSupported
// when ONCS lacks Write Zeroes.
func (ns *Namespace) WriteZeroes(off, length int64) error {
	return ns.rangeOp(IOWriteZeroes, nvme.ONCSWriteZeroes, off, length)
}

func (ns *Namespace) rangeOp(op IOOp, oncs uint16, off, length int64) error {
	if ns.c.ident.ONCS&oncs == 0 {
		return fmt.Errorf("%w: %s (ONCS %#x)", ErrNotSupported, op, ns.c.ident.ONCS)
	}
	_, err := ns.checkRange(off, length)
	if err != nil {
		return err
	}
	if off+length > ns.Size() {
		return ns.outOfRange(op.String())
	}
	if length == 0 {
		return nil
	}
	_, err = blocking(ns, op, off, nil, length, false)
	return err
}

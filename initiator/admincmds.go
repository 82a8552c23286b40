package initiator

import (
	"context"
	"fmt"

	"github.com/rdmablk/rdmablk/nvme"
)

// Typed admin and fabrics commands on the admin queue. Each returns a
// *StatusError for an NVMe failure and the transport error otherwise.

// fabricsConnect sends the fabrics Connect command for the admin queue and
// returns the response's DW0: the controller ID the target allocated
// (bits 15:0) and the AUTHREQ bits.
func (a *adminQueue) fabricsConnect(ctx context.Context, sqsize uint16, kato uint32, d *nvme.ConnectData) (uint32, error) {
	b, err := a.getBuf(ctx)
	if err != nil {
		return 0, err
	}
	defer a.putBuf(b)
	if err := d.Marshal(b.b); err != nil {
		return 0, fmt.Errorf("%w: connect data: %w", ErrInvalid, err)
	}
	cqe, err := a.exec(ctx, func(e *nvme.SQE) { e.SetConnect(0, sqsize, 0, kato) }, b, nvme.ConnectDataSize, hostToCtrl)
	if err != nil {
		return 0, err
	}
	if st := cqe.Status(); !st.OK() {
		return 0, &ConnectError{Status: st, Param: nvme.ParseConnectInvalidParam(cqe.DW0()), SubNQN: d.SubNQN, HostNQN: d.HostNQN}
	}
	return cqe.DW0(), nil
}

// propertyGet reads a controller property (4 or 8 bytes).
func (a *adminQueue) propertyGet(ctx context.Context, off uint32, size8 bool) (uint64, error) {
	cqe, err := a.exec(ctx, func(e *nvme.SQE) { e.SetPropertyGet(off, size8) }, nil, 0, noData)
	if err != nil {
		return 0, err
	}
	if err := statusErr(fmt.Sprintf("property get %#x", off), cqe.Status()); err != nil {
		return 0, err
	}
	v := cqe.Result64()
	if !size8 {
		v &= 0xFFFFFFFF
	}
	return v, nil
}

// propertySet writes a 4-byte controller property.
func (a *adminQueue) propertySet(ctx context.Context, off uint32, v uint32) error {
	cqe, err := a.exec(ctx, func(e *nvme.SQE) { e.SetPropertySet(off, false, uint64(v)) }, nil, 0, noData)
	if err != nil {
		return err
	}
	return statusErr(fmt.Sprintf("property set %#x", off), cqe.Status())
}

// readData runs a controller-to-host command into an admin buffer and
// copies n bytes out (n ≤ adminBufSize).
func (a *adminQueue) readData(ctx context.Context, op string, fill func(*nvme.SQE), n int) ([]byte, error) {
	if n <= 0 || n > adminBufSize {
		return nil, fmt.Errorf("%w: %s of %d bytes", ErrInvalid, op, n)
	}
	b, err := a.getBuf(ctx)
	if err != nil {
		return nil, err
	}
	defer a.putBuf(b)
	clear(b.b[:n])
	cqe, err := a.exec(ctx, fill, b, n, ctrlToHost)
	if err != nil {
		return nil, err
	}
	if err := statusErr(op, cqe.Status()); err != nil {
		return nil, err
	}
	return append([]byte(nil), b.b[:n]...), nil
}

// identify reads an Identify data structure.
func (a *adminQueue) identify(ctx context.Context, cns uint8, nsid uint32) ([]byte, error) {
	return a.readData(ctx, fmt.Sprintf("identify cns %#x nsid %d", cns, nsid),
		func(e *nvme.SQE) { e.SetIdentify(cns, nsid) }, nvme.IdentifySize)
}

// getLogPage reads n bytes of log page lid at offset, in pieces of at most
// chunk bytes.
func (a *adminQueue) getLogPage(ctx context.Context, lid uint8, nsid uint32, n int, offset uint64, chunk int) ([]byte, error) {
	if chunk <= 0 || chunk > adminBufSize {
		chunk = adminBufSize
	}
	chunk &^= 3 // NUMD counts dwords
	if n <= 0 || n%4 != 0 || chunk == 0 {
		return nil, fmt.Errorf("%w: log page %#x of %d bytes", ErrInvalid, lid, n)
	}
	out := make([]byte, 0, n)
	for len(out) < n {
		m := min(chunk, n-len(out))
		off := offset + uint64(len(out))
		part, err := a.readData(ctx, fmt.Sprintf("get log page %#x", lid),
			func(e *nvme.SQE) { e.SetGetLogPage(lid, nsid, uint32(m), off) }, m)
		if err != nil {
			return nil, err
		}
		out = append(out, part...)
	}
	return out, nil
}

// setFeatures sets a feature and returns the completion's DW0.
func (a *adminQueue) setFeatures(ctx context.Context, fid uint8, cdw11 uint32) (uint32, error) {
	cqe, err := a.exec(ctx, func(e *nvme.SQE) { e.SetSetFeatures(fid, cdw11) }, nil, 0, noData)
	if err != nil {
		return 0, err
	}
	if err := statusErr(fmt.Sprintf("set features %#x", fid), cqe.Status()); err != nil {
		return 0, err
	}
	return cqe.DW0(), nil
}

// getFeatures reads a feature's current value (the completion's DW0).
func (a *adminQueue) getFeatures(ctx context.Context, fid uint8, cdw11 uint32) (uint32, error) {
	cqe, err := a.exec(ctx, func(e *nvme.SQE) { e.SetGetFeatures(fid, cdw11) }, nil, 0, noData)
	if err != nil {
		return 0, err
	}
	if err := statusErr(fmt.Sprintf("get features %#x", fid), cqe.Status()); err != nil {
		return 0, err
	}
	return cqe.DW0(), nil
}

// keepAlive sends one Keep Alive command.
func (a *adminQueue) keepAlive(ctx context.Context) error {
	cqe, err := a.exec(ctx, func(e *nvme.SQE) { e.SetKeepAlive() }, nil, 0, noData)
	if err != nil {
		return err
	}
	return statusErr("keep alive", cqe.Status())
}

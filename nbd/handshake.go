package nbd

import (
	"encoding/binary"
	"fmt"
	"io"
)

// negotiate runs the fixed newstyle handshake on rw and returns the export
// the client chose, or nil when the client aborted. A protocol violation
// is an error (the caller closes the connection).
func (s *Server) negotiate(rw io.ReadWriter) (*Export, error) {
	var hello [18]byte
	binary.BigEndian.PutUint64(hello[0:], magicInit)
	binary.BigEndian.PutUint64(hello[8:], magicOpt)
	binary.BigEndian.PutUint16(hello[16:], flagFixedNewstyle|flagNoZeroes)
	if _, err := rw.Write(hello[:]); err != nil {
		return nil, err
	}
	var cf [4]byte
	if _, err := io.ReadFull(rw, cf[:]); err != nil {
		return nil, err
	}
	cflags := binary.BigEndian.Uint32(cf[:])
	if cflags&^(cflagFixedNewstyle|cflagNoZeroes) != 0 {
		return nil, fmt.Errorf("%w: unknown client flags %#x", ErrProtocol, cflags)
	}
	noZeroes := cflags&cflagNoZeroes != 0
	var hdr [16]byte
	for {
		if _, err := io.ReadFull(rw, hdr[:]); err != nil {
			return nil, err
		}
		if m := binary.BigEndian.Uint64(hdr[0:]); m != magicOpt {
			return nil, fmt.Errorf("%w: option magic %#x", ErrProtocol, m)
		}
		opt := binary.BigEndian.Uint32(hdr[8:])
		n := binary.BigEndian.Uint32(hdr[12:])
		if n > maxOptionLength {
			return nil, fmt.Errorf("%w: option %d of %d bytes", ErrProtocol, opt, n)
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(rw, data); err != nil {
			return nil, err
		}
		switch opt {
		case optExportName:
			e := s.export(string(data))
			if e == nil {
				// No way to say "no" to EXPORT_NAME but to hang up.
				return nil, fmt.Errorf("%w: %q", ErrNoExport, data)
			}
			out := make([]byte, 10, 10+124)
			binary.BigEndian.PutUint64(out[0:], uint64(e.Backend.Size()))
			binary.BigEndian.PutUint16(out[8:], e.flags())
			if !noZeroes {
				out = out[:10+124]
			}
			_, err := rw.Write(out)
			return e, err
		case optAbort:
			_ = optReply(rw, opt, repAck, nil)
			return nil, nil
		case optList:
			if n != 0 {
				if err := optReply(rw, opt, repErrInvalid, nil); err != nil {
					return nil, err
				}
				continue
			}
			for _, e := range s.exports {
				d := make([]byte, 4+len(e.Name))
				binary.BigEndian.PutUint32(d, uint32(len(e.Name)))
				copy(d[4:], e.Name)
				if err := optReply(rw, opt, repServer, d); err != nil {
					return nil, err
				}
			}
			if err := optReply(rw, opt, repAck, nil); err != nil {
				return nil, err
			}
		case optInfo, optGo:
			e, err := s.info(rw, opt, data)
			if err != nil {
				return nil, err
			}
			if e != nil && opt == optGo {
				return e, nil
			}
		default:
			// STARTTLS, STRUCTURED_REPLY, meta contexts, extended
			// headers...: unsupported; the client falls back.
			if err := optReply(rw, opt, repErrUnsup, nil); err != nil {
				return nil, err
			}
		}
	}
}

// info answers NBD_OPT_INFO / NBD_OPT_GO. It returns the export when the
// request was valid and acknowledged, nil after an error reply.
func (s *Server) info(w io.Writer, opt uint32, data []byte) (*Export, error) {
	if len(data) < 6 {
		return nil, optReply(w, opt, repErrInvalid, nil)
	}
	nameLen := binary.BigEndian.Uint32(data)
	if uint64(nameLen)+6 > uint64(len(data)) || nameLen > maxExportNameLength {
		return nil, optReply(w, opt, repErrInvalid, nil)
	}
	name := string(data[4 : 4+nameLen])
	rest := data[4+nameLen:]
	nreq := int(binary.BigEndian.Uint16(rest))
	if len(rest) != 2+2*nreq {
		return nil, optReply(w, opt, repErrInvalid, nil)
	}
	e := s.export(name)
	if e == nil {
		return nil, optReply(w, opt, repErrUnknown, []byte("no such export"))
	}
	var wantName, wantDesc bool
	for i := 0; i < nreq; i++ {
		switch binary.BigEndian.Uint16(rest[2+2*i:]) {
		case infoName:
			wantName = true
		case infoDescription:
			wantDesc = true
		}
	}
	var d [18]byte
	binary.BigEndian.PutUint16(d[0:], infoExport)
	binary.BigEndian.PutUint64(d[2:], uint64(e.Backend.Size()))
	binary.BigEndian.PutUint16(d[10:], e.flags())
	if err := optReply(w, opt, repInfo, d[:12]); err != nil {
		return nil, err
	}
	// Block size constraints are always sent: clients that honour them
	// avoid the read-modify-write path.
	minB, prefB := e.blockSizes()
	binary.BigEndian.PutUint16(d[0:], infoBlockSize)
	binary.BigEndian.PutUint32(d[2:], minB)
	binary.BigEndian.PutUint32(d[6:], prefB)
	binary.BigEndian.PutUint32(d[10:], MaxRequest)
	if err := optReply(w, opt, repInfo, d[:14]); err != nil {
		return nil, err
	}
	if wantName {
		if err := optReply(w, opt, repInfo, append([]byte{0, infoName}, e.Name...)); err != nil {
			return nil, err
		}
	}
	if wantDesc && e.Description != "" {
		if err := optReply(w, opt, repInfo, append([]byte{0, infoDescription}, e.Description...)); err != nil {
			return nil, err
		}
	}
	return e, optReply(w, opt, repAck, nil)
}

// optReply writes one option reply.
func optReply(w io.Writer, opt, typ uint32, data []byte) error {
	b := make([]byte, 20+len(data))
	binary.BigEndian.PutUint64(b[0:], magicOptReply)
	binary.BigEndian.PutUint32(b[8:], opt)
	binary.BigEndian.PutUint32(b[12:], typ)
	binary.BigEndian.PutUint32(b[16:], uint32(len(data)))
	copy(b[20:], data)
	_, err := w.Write(b)
	return err
}

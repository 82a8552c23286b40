package soft

import (
	"bufio"
	"io"
	"net"
)

const (
	// streamBufSize is the write buffer size of a link.
	streamBufSize = 64 << 10
	// readBufSize is the read buffer of a link: large enough to batch small
	// frames, small enough that most of a large payload is read straight
	// into its destination rather than copied out of the buffer.
	readBufSize = 32 << 10
	// copyThreshold: payloads up to this size are copied into the write
	// buffer (batching small frames into one syscall); larger ones are
	// written straight from registered memory with writev.
	copyThreshold = 16 << 10
)

// frameWriter buffers frames for one stream. It is owned by one goroutine at
// a time: the CM code during the handshake, then the link's tx engine.
type frameWriter struct {
	conn net.Conn
	buf  []byte      // pending bytes, cap streamBufSize
	iov  [][]byte    // scratch for writev: buffered bytes + payload segments
	bufs net.Buffers // the vector being written (consumed by WriteTo)
	hdr  [headerLen]byte
}

func newFrameWriter(conn net.Conn) *frameWriter {
	return &frameWriter{conn: conn, buf: make([]byte, 0, streamBufSize), iov: make([][]byte, 0, 8)}
}

// frame appends one frame. h.length must equal the total length of payload.
// Small payloads are copied into the buffer; large ones are written at once
// together with the buffered bytes, without copying. The caller flushes.
func (w *frameWriter) frame(h *header, payload ...[]byte) error {
	if len(w.buf)+headerLen > cap(w.buf) {
		if err := w.flush(); err != nil {
			return err
		}
	}
	h.encode(w.hdr[:])
	w.buf = append(w.buf, w.hdr[:]...)
	n := int(h.length)
	if n == 0 {
		return nil
	}
	if n <= copyThreshold && len(w.buf)+n <= cap(w.buf) {
		for _, p := range payload {
			w.buf = append(w.buf, p...)
		}
		return nil
	}
	w.iov = append(w.iov[:0], w.buf)
	for _, p := range payload {
		if len(p) > 0 {
			w.iov = append(w.iov, p)
		}
	}
	w.bufs = w.iov
	_, err := w.bufs.WriteTo(w.conn)
	w.buf = w.buf[:0]
	clear(w.iov)
	w.bufs = nil
	return err
}

// segs appends one frame whose payload is a scatter list (the resolved
// SGEs of a work request).
func (w *frameWriter) segs(h *header, segs [][]byte) error {
	return w.frame(h, segs...)
}

// flush writes the buffered bytes.
func (w *frameWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.conn.Write(w.buf)
	w.buf = w.buf[:0]
	return err
}

// frameReader reads frames from one stream; owned by one goroutine at a
// time (the CM code, then the link's rx engine).
type frameReader struct {
	br  *bufio.Reader
	hdr [headerLen]byte
}

func newFrameReader(conn net.Conn) *frameReader {
	return &frameReader{br: bufio.NewReaderSize(conn, readBufSize)}
}

// next reads and validates the next header.
func (r *frameReader) next(h *header) error {
	if _, err := io.ReadFull(r.br, r.hdr[:]); err != nil {
		return err
	}
	return h.decode(r.hdr[:])
}

// full reads exactly len(b) payload bytes into b.
func (r *frameReader) full(b []byte) error {
	_, err := io.ReadFull(r.br, b)
	return err
}

// scatter reads n payload bytes into the segments in order. The segments
// must hold at least n bytes.
func (r *frameReader) scatter(segs [][]byte, n uint32) error {
	left := int(n)
	for _, s := range segs {
		if left == 0 {
			break
		}
		if len(s) > left {
			s = s[:left]
		}
		if err := r.full(s); err != nil {
			return err
		}
		left -= len(s)
	}
	if left != 0 {
		return r.discard(uint32(left))
	}
	return nil
}

// discard skips n payload bytes.
func (r *frameReader) discard(n uint32) error {
	_, err := r.br.Discard(int(n))
	return err
}

// pending reports whether a complete header is already buffered, so the rx
// engine can keep processing before waking the tx engine.
func (r *frameReader) pending() bool { return r.br.Buffered() >= headerLen }

package nbdtest

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"syscall"
)

// Reads sends n reads of size bytes on c, which must be in the
// transmission phase, keeping qd in flight (offsets cycle through the
// first 256 blocks of size), and reads their replies. It allocates
// nothing after its setup, so benchmarks can count the server's
// allocations; start (may be nil) is called when setup is done. Replies
// read together from the socket are answered with one write of as many
// new requests.
func Reads(c net.Conn, qd, n, size int, start func()) error {
	reqs := make([]byte, 28*qd)
	var next uint64
	fill := func(k int) []byte {
		p := reqs[:28*k]
		for i := range k {
			h := p[28*i:]
			binary.BigEndian.PutUint32(h[0:], magicRequest)
			binary.BigEndian.PutUint16(h[4:], 0)
			binary.BigEndian.PutUint16(h[6:], cmdRead)
			binary.BigEndian.PutUint64(h[8:], next)
			binary.BigEndian.PutUint64(h[16:], next%256*uint64(size))
			binary.BigEndian.PutUint32(h[24:], uint32(size))
			next++
		}
		return p
	}
	br := bufio.NewReaderSize(c, max(256<<10, 2*(16+size)))
	rep := make([]byte, 16+size)
	if start != nil {
		start()
	}
	sent := min(qd, n)
	if _, err := c.Write(fill(sent)); err != nil {
		return err
	}
	for got := 0; got < n; {
		k := 0
		for {
			if _, err := io.ReadFull(br, rep[:16]); err != nil {
				return err
			}
			if binary.BigEndian.Uint32(rep[0:]) != magicReply {
				return fmt.Errorf("nbdtest: bad reply magic %#x", rep[:4])
			}
			if e := binary.BigEndian.Uint32(rep[4:]); e != 0 {
				return &Error{Op: "read", Errno: syscall.Errno(e)}
			}
			if _, err := io.ReadFull(br, rep[16:]); err != nil {
				return err
			}
			k++
			if br.Buffered() < len(rep) {
				break
			}
		}
		got += k
		if more := min(k, n-sent); more > 0 {
			if _, err := c.Write(fill(more)); err != nil {
				return err
			}
			sent += more
		}
	}
	return nil
}

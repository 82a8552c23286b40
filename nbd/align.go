package nbd

// Backend calls with block alignment: aligned requests go straight
// through; unaligned ones widen to whole blocks (reads) or do a
// read-modify-write of the widened range under Export.rmw (writes).

// span widens [off, off+n) to whole blocks of bs.
func span(off, n int64, bs int) (start, end int64) {
	b := int64(bs)
	start = off - off%b
	end = off + n
	if r := end % b; r != 0 {
		end += b - r
	}
	return start, end
}

func (e *Export) bs() int {
	if bs := e.Backend.BlockSize(); bs > 1 {
		return bs
	}
	return 1
}

func aligned(off, n int64, bs int) bool {
	return off%int64(bs) == 0 && n%int64(bs) == 0
}

// scratch returns a buffer of n bytes: pooled up to MaxRequest, else fresh.
func scratch(n int) (*[]byte, func()) {
	if n <= MaxRequest {
		p := getBuf(n)
		return p, func() { putBuf(p) }
	}
	b := make([]byte, n)
	return &b, func() {}
}

func (e *Export) readAt(p []byte, off int64) error {
	bs := e.bs()
	if len(p) == 0 {
		return nil
	}
	if aligned(off, int64(len(p)), bs) {
		_, err := e.Backend.ReadAt(p, off)
		return err
	}
	start, end := span(off, int64(len(p)), bs)
	tmp, done := scratch(int(end - start))
	defer done()
	if _, err := e.Backend.ReadAt(*tmp, start); err != nil {
		return err
	}
	copy(p, (*tmp)[off-start:])
	return nil
}

// writeAligned writes whole blocks, with FUA semantics when fua.
func (e *Export) writeAligned(p []byte, off int64, fua bool) error {
	if fua {
		if w, ok := e.Backend.(FUAWriter); ok {
			return w.WriteFUA(p, off)
		}
	}
	if _, err := e.Backend.WriteAt(p, off); err != nil {
		return err
	}
	if fua {
		return e.flush()
	}
	return nil
}

func (e *Export) writeAt(p []byte, off int64, fua bool) error {
	bs := e.bs()
	if len(p) == 0 {
		if fua {
			return e.flush()
		}
		return nil
	}
	if aligned(off, int64(len(p)), bs) {
		return e.writeAligned(p, off, fua)
	}
	e.rmw.Lock()
	defer e.rmw.Unlock()
	start, end := span(off, int64(len(p)), bs)
	tmp, done := scratch(int(end - start))
	defer done()
	// Only the edge blocks need the old data.
	b := int64(bs)
	if _, err := e.Backend.ReadAt((*tmp)[:b], start); err != nil {
		return err
	}
	if end-start > b {
		if _, err := e.Backend.ReadAt((*tmp)[end-start-b:], end-b); err != nil {
			return err
		}
	}
	copy((*tmp)[off-start:], p)
	return e.writeAligned(*tmp, start, fua)
}

func (e *Export) flush() error {
	if f, ok := e.Backend.(Flusher); ok {
		return f.Flush()
	}
	return nil
}

// trim deallocates the whole blocks inside [off, off+n); partial blocks
// at the edges are left alone (trim is advisory).
func (e *Export) trim(off, n int64, fua bool) error {
	t, ok := e.Backend.(Trimmer)
	if !ok {
		return nil
	}
	b := int64(e.bs())
	start := off
	if r := start % b; r != 0 {
		start += b - r
	}
	end := (off + n) - (off+n)%b
	if end > start {
		if err := t.Deallocate(start, end-start); err != nil {
			return err
		}
	}
	if fua {
		return e.flush()
	}
	return nil
}

// zero writes zeroes over [off, off+n): whole blocks with Zeroer (or
// zero-filled writes), unaligned edges by read-modify-write.
func (e *Export) zero(off, n int64, fua bool) error {
	if n == 0 {
		return nil
	}
	bs := e.bs()
	b := int64(bs)
	start := off
	if r := start % b; r != 0 {
		start += b - r
	}
	end := (off + n) - (off+n)%b
	if start > off+n {
		start = off + n
	}
	// Edges (also the case where the range sits inside one block).
	if start > off || end < off+n {
		zeros, done := scratch(bs)
		clear(*zeros)
		defer done()
		if end < start { // inside a single block
			if err := e.writeAt((*zeros)[:n], off, fua); err != nil {
				return err
			}
			return nil
		}
		if start > off {
			if err := e.writeAt((*zeros)[:start-off], off, fua); err != nil {
				return err
			}
		}
		if end < off+n {
			if err := e.writeAt((*zeros)[:off+n-end], end, fua); err != nil {
				return err
			}
		}
	}
	if end <= start {
		return nil
	}
	if z, ok := e.Backend.(Zeroer); ok {
		if err := z.WriteZeroes(start, end-start); err != nil {
			return err
		}
		if fua {
			return e.flush()
		}
		return nil
	}
	const step = 1 << 20
	zeros, done := scratch(step)
	clear(*zeros)
	defer done()
	for o := start; o < end; o += step {
		m := min(step, end-o)
		if err := e.writeAligned((*zeros)[:m], o, fua); err != nil {
			return err
		}
	}
	return nil
}

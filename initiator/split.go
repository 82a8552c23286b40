package initiator

// chunker splits the block range [lba, lba+left) into commands of at most
// max blocks each, in order. It does not allocate.
type chunker struct {
	lba  uint64
	left uint64
	max  uint64
}

// newChunker returns a chunker; max 0 is treated as 1.
func newChunker(lba, blocks, max uint64) chunker {
	if max == 0 {
		max = 1
	}
	return chunker{lba: lba, left: blocks, max: max}
}

// more reports whether blocks remain.
func (c *chunker) more() bool { return c.left > 0 }

// next returns the next command's first block and block count.
func (c *chunker) next() (lba uint64, n uint64, ok bool) {
	if c.left == 0 {
		return 0, 0, false
	}
	n = min(c.left, c.max)
	lba = c.lba
	c.lba += n
	c.left -= n
	return lba, n, true
}

// maxBlocksPerCommand is the largest block count of one command of op on
// a namespace with block size bs, given the queue's MaxTransfer.
func maxBlocksPerCommand(op IOOp, bs, maxTransfer int) uint64 {
	switch op {
	case IORead, IOWrite:
		if bs <= 0 {
			return 0
		}
		return uint64(min(maxTransfer/bs, MaxBlocksPerIO))
	case IOWriteZeroes:
		return MaxBlocksPerIO
	case IODeallocate:
		return 1<<32 - 1 // one DSM range: 32-bit NLB
	}
	return 1
}

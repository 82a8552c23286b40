package initiator

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

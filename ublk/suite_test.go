//go:build linux

package ublk_test

import (
	"testing"

	"github.com/rdmablk/rdmablk/ublk"
	"github.com/rdmablk/rdmablk/ublk/ublktest"
)

// TestMemBackendContract runs the Backend contract suite against the
// memory backend the real tests use.
func TestMemBackendContract(t *testing.T) {
	ublktest.RunBackendSuite(t, ublktest.NewMem(ublk.Geometry{
		LogicalBlockSize: 4096, Blocks: 1024, Queues: 2, Depth: 16, MaxTransfer: 64 << 10,
		MaxDiscardBlocks: 256, MaxWriteZeroesBlocks: 256, VolatileCache: true, FUA: true,
	}))
	ublktest.RunBackendSuite(t, ublktest.NewMem(ublk.Geometry{
		LogicalBlockSize: 512, Blocks: 64, Queues: 1, Depth: 1, MaxTransfer: 4096,
	}))
}

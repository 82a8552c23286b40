package file

import (
	"errors"
	"os"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/blockdevtest"
)

// TestContractBlockDevice runs the suite against the block device named by
// RDMABLK_TEST_BLOCKDEV (for example a loop device: `losetup -f --show
// img`). It DESTROYS the first 1 MiB of the device. Skipped when unset.
func TestContractBlockDevice(t *testing.T) {
	dev := os.Getenv("RDMABLK_TEST_BLOCKDEV")
	if dev == "" {
		t.Skip("RDMABLK_TEST_BLOCKDEV not set")
	}
	var last *Backend
	open := func(t *testing.T, blocks uint64, bs int) blockdev.Backend {
		b, err := Open(dev, Options{Size: int64(blocks) * int64(bs), BlockSize: bs})
		if errors.Is(err, ErrInvalidOptions) {
			t.Skipf("%s cannot serve %d-byte blocks: %v", dev, bs, err)
		}
		if err != nil {
			t.Fatalf("Open(%s): %v", dev, err)
		}
		if !b.IsBlockDevice() {
			t.Fatalf("%s is not a block device", dev)
		}
		// The suite wants a zeroed device.
		if err := b.WriteZeroes(0, blocks); err != nil {
			t.Fatalf("WriteZeroes: %v", err)
		}
		last = b
		return b
	}
	reopen := func(t *testing.T) blockdev.Backend {
		b, err := Open(dev, Options{Size: int64(last.Blocks()) * int64(last.BlockSize()), BlockSize: last.BlockSize()})
		if err != nil {
			t.Fatalf("reopen %s: %v", dev, err)
		}
		return b
	}
	blockdevtest.Run(t, open, blockdevtest.Caps{Persistent: true, Reopen: reopen, DiscardUndefined: true, Capabilities: fileCaps})
	if last != nil {
		t.Logf("last backend: align %d, %+v", last.DirectAlign(), last.Stats())
	}
}

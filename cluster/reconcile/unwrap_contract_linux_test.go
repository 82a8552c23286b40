package reconcile

import (
	"path/filepath"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/file"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/target/targettest"
)

// TestVolumeHandleUnwrapContract runs the target.Unwrapper contract on
// the volume handle over every kind of backend the reconciler opens.
func TestVolumeHandleUnwrapContract(t *testing.T) {
	t.Run("mem", func(t *testing.T) {
		b := mem.New(16, 512)
		targettest.CheckUnwrapper(t, newVolumeBackend(b, nil), b)
	})
	t.Run("fixed-size", func(t *testing.T) {
		b := fixedSize{mem.New(16, 512)}
		targettest.CheckUnwrapper(t, newVolumeBackend(b, nil), b)
	})
	t.Run("resizable", func(t *testing.T) {
		b := &resizableMem{Backend: mem.New(16, 512)}
		b.blocks.Store(16)
		targettest.CheckUnwrapper(t, newVolumeBackend(b, nil), b)
	})
	fb, err := file.Open(filepath.Join(t.TempDir(), "v.img"), file.Options{Size: 1 << 20, BlockSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	t.Run("file+resize", func(t *testing.T) {
		g := growable{fb}
		targettest.CheckUnwrapper(t, newVolumeBackend(g, nil), g)
	})
	t.Run("file", func(t *testing.T) {
		var b blockdev.Backend = fb
		if _, ok := b.(blockdev.Resizer); !ok {
			t.Skip("blockdev/file has no Resizer yet: until it has, the handle cannot unwrap a file volume and it runs on the worker pool")
		}
		targettest.CheckUnwrapper(t, newVolumeBackend(fb, nil), fb)
	})
}

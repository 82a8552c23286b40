package cluster

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// TestCreateBeyondFilesystem: sizes no filesystem of the owner could hold
// (1 PiB on the test machine's, 8 EiB − 1 anywhere) are refused at create
// with a message naming the limit, and nothing is left in the catalogue.
func TestCreateBeyondFilesystem(t *testing.T) {
	ms := startCluster(t, 1)
	m := ms[0]
	for _, c := range []struct {
		size int64
		want string
	}{
		{1 << 50, "volume filesystem holds only"},
		{1<<63 - 512, "1 EiB"},
	} {
		_, err := m.c.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: "huge", Size: c.size})
		if ae := (*api.Error)(nil); !errors.As(err, &ae) || ae.Status != 400 || !strings.Contains(ae.Message, c.want) {
			t.Errorf("size %d: %v, want 400 naming %q", c.size, err, c.want)
		}
	}
	if _, err := m.c.Volume(ctx(t), "huge"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("refused volume in the catalogue: %v", err)
	}
}

package cluster

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/internal/syncbuf"
)

// TestNormalStartLog: a normal 3-node start (bootstrap, two joins, a
// write) with the default raft timeouts logs no WARN or ERROR, and no
// record repeats a key.
func TestNormalStartLog(t *testing.T) {
	var buf syncbuf.Buffer
	logSink, fastRaft = &buf, false
	t.Cleanup(func() { logSink, fastRaft = nil, true })
	ms := startCluster(t, 3)
	if _, err := ms[2].c.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: "v", Size: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if lv := rec["level"]; lv == "WARN" || lv == "ERROR" {
			t.Errorf("%s on a normal start: %s", lv, line)
		}
		dec := json.NewDecoder(strings.NewReader(line))
		seen := map[string]bool{}
		dec.Token() // {
		for dec.More() {
			k, _ := dec.Token()
			var skip json.RawMessage
			dec.Decode(&skip)
			if ks, _ := k.(string); seen[ks] {
				t.Errorf("key %q twice: %s", ks, line)
			} else {
				seen[ks] = true
			}
		}
	}
}

package cluster

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// TestHCLogToSlog: raft's hclog lines become slog records with slog's
// levels, raft's fields as attributes, no key twice (a raft "node" field
// next to the logger's "node" becomes raft_node), and the messages of a
// normal start are not warnings.
func TestHCLogToSlog(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", "n1")
	hl := newHCLogger(log, "debug")
	hl.Warn("failed to contact", "server-id", "n2", "time", "1s")
	hl.Error("failed to appendEntries to", "peer", "n3", "node", "x")
	hl.Warn("no known peers, aborting election")
	hl.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "", "last-leader-id", "")
	hl.Error("failed to take snapshot", "error", "disk full")

	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if strings.Count(line, `"node":`) > 1 {
			t.Errorf("duplicate node key: %s", line)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		recs = append(recs, m)
	}
	if len(recs) != 5 {
		t.Fatalf("%d records: %s", len(recs), buf.String())
	}
	want := []struct{ level, msg, key, val string }{
		{"WARN", "raft: failed to contact", "server_id", "n2"},
		{"WARN", "raft: failed to appendEntries to", "raft_node", "x"}, // a peer down: degraded, not broken
		{"DEBUG", "raft: no known peers, aborting election", "component", "raft"},
		{"INFO", "raft: heartbeat timeout reached, starting election", "last_leader_id", ""},
		{"ERROR", "raft: failed to take snapshot", "error", "disk full"},
	}
	for i, w := range want {
		r := recs[i]
		if r["level"] != w.level || r["msg"] != w.msg || r[w.key] != w.val || r["node"] != "n1" {
			t.Errorf("record %d: %v, want level %s msg %q %s=%q", i, r, w.level, w.msg, w.key, w.val)
		}
	}
}

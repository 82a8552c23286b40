package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// newHCLogger routes raft's hclog output into log as slog records: the
// message as the record's message, hclog's level as the slog level, and
// hclog's key/value pairs as attributes (under "raft_" when they would
// clash with a key log already carries, such as "node"). Messages that a
// normal start produces are lowered (see quiet). level is the least
// severe level passed on ("warn" if empty).
func newHCLogger(log *slog.Logger, level string) hclog.Logger {
	if level == "" {
		level = "warn"
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:       "raft",
		Level:      hclog.LevelFromString(level),
		Output:     slogWriter{log},
		JSONFormat: true,
	})
}

// slogWriter turns hclog's JSON lines into slog records.
type slogWriter struct{ log *slog.Logger }

// reserved are the keys the loggers above raft already set.
var reserved = map[string]bool{"node": true, "component": true, "time": true, "level": true, "msg": true}

// quiet lists raft messages that are part of a normal start or join, with
// the level they are logged at instead of raft's WARN: a joining node
// waits for the leader to add it; the first election of a bootstrapped
// cluster starts with no previous leader.
var quiet = []struct {
	prefix string
	level  slog.Level
}{
	{"no known peers, aborting election", slog.LevelDebug},
	{"heartbeat timeout reached, not part of a stable configuration or a non-voter, not triggering a leader election", slog.LevelDebug},
	// The leader walks a new or lagging follower's log back: routine.
	{"appendEntries rejected, sending older logs", slog.LevelInfo},
	// A peer that is down or restarting: raft retries with backoff; the
	// cluster is degraded, not broken (raft logs these as ERROR).
	{"failed to make requestVote RPC", slog.LevelWarn},
	{"failed to appendEntries to", slog.LevelWarn},
	{"failed to heartbeat to", slog.LevelWarn},
	{"failed to make pre-vote RPC", slog.LevelWarn},
}

func (w slogWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		w.record(line)
	}
	return len(p), nil
}

func (w slogWriter) record(line []byte) {
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		w.log.Info("raft", "line", string(line))
		return
	}
	msg, _ := m["@message"].(string)
	lvl := slog.LevelInfo
	switch lv, _ := m["@level"].(string); lv {
	case "error":
		lvl = slog.LevelError
	case "warn":
		lvl = slog.LevelWarn
	case "debug", "trace":
		lvl = slog.LevelDebug
	}
	for _, q := range quiet {
		if strings.HasPrefix(msg, q.prefix) {
			lvl = q.level
		}
	}
	// A node that just joined has an empty log: the leader's first
	// append finds nothing before it.
	if msg == "failed to get previous log" && m["last-index"] == float64(0) {
		lvl = slog.LevelDebug
	}
	// The first election after bootstrap names no previous leader.
	if strings.HasPrefix(msg, "heartbeat timeout reached, starting election") && m["last-leader-id"] == "" {
		lvl = slog.LevelInfo
	}
	if !w.log.Enabled(context.Background(), lvl) {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if !strings.HasPrefix(k, "@") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	attrs := []slog.Attr{slog.String("component", "raft")}
	for _, k := range keys {
		name := strings.ReplaceAll(k, "-", "_")
		if reserved[name] {
			name = "raft_" + name
		}
		attrs = append(attrs, slog.Any(name, m[k]))
	}
	w.log.LogAttrs(context.Background(), lvl, "raft: "+msg, attrs...)
}

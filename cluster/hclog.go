package cluster

import (
	"bytes"
	"context"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// newHCLogger routes raft's hclog output into log, one slog record per
// line, at level and above.
func newHCLogger(log *slog.Logger, level string) hclog.Logger {
	if level == "" {
		level = "warn"
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:        "raft",
		Level:       hclog.LevelFromString(level),
		Output:      slogWriter{log},
		DisableTime: true,
	})
}

// slogWriter turns hclog lines into slog records.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		s := string(line)
		lvl := slog.LevelInfo
		switch {
		case strings.Contains(s, "[ERROR]"):
			lvl = slog.LevelError
		case strings.Contains(s, "[WARN]"):
			lvl = slog.LevelWarn
		case strings.Contains(s, "[DEBUG]"), strings.Contains(s, "[TRACE]"):
			lvl = slog.LevelDebug
		}
		w.log.Log(context.Background(), lvl, "raft", "line", s)
	}
	return len(p), nil
}

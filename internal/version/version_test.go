package version

import (
	"runtime"
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	i := Get()
	if i.GoVersion != runtime.Version() {
		t.Errorf("go version %q, want %q", i.GoVersion, runtime.Version())
	}
	s := i.String()
	for _, want := range []string{"commit ", runtime.Version(), " tags "} {
		if !strings.Contains(s, want) {
			t.Errorf("%q lacks %q", s, want)
		}
	}
}

func TestStringTagsAndDirty(t *testing.T) {
	i := Info{Version: "v1.2.3", Commit: "abc-dirty", CommitTime: "2026-01-01T00:00:00Z", GoVersion: "go1.26.8", Tags: "ibverbs"}
	if got, want := i.String(), "v1.2.3 commit abc-dirty (2026-01-01T00:00:00Z) go1.26.8 tags ibverbs"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

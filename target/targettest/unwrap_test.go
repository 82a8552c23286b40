package targettest

import (
	"fmt"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
)

// recorder is a testing.TB whose Fatalf records instead of stopping.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }
func (r *recorder) Helper()                           {}
func (r *recorder) Logf(string, ...any)               {}

type asyncMem struct{ *mem.Backend }

func (asyncMem) SubmitRead([]byte, uint64, blockdev.Completion) bool { return false }
func (asyncMem) SubmitWrite([]byte, uint64, blockdev.WriteFlags, blockdev.Completion) bool {
	return false
}

// wrapper unwraps to in, or to nothing (nilUnwrap), or to a new value
// every call (unstable).
type wrapper struct {
	blockdev.Backend
	nilUnwrap, unstable bool
	n                   int
}

func (w *wrapper) Unwrap() blockdev.Backend {
	switch {
	case w.nilUnwrap:
		return nil
	case w.unstable:
		w.n++
		return asyncMem{mem.New(uint64(8+w.n), 512)}
	}
	return w.Backend
}

func TestCheckUnwrapper(t *testing.T) {
	in := asyncMem{mem.New(8, 512)}
	cases := []struct {
		name string
		w    blockdev.Backend
		ok   bool
	}{
		{"good", &wrapper{Backend: in}, true},
		{"hides async", &wrapper{Backend: in, nilUnwrap: true}, false},
		{"unstable", &wrapper{Backend: in, unstable: true}, false},
		{"other backend", &wrapper{Backend: asyncMem{mem.New(8, 512)}}, false},
		{"no unwrapper", in, false},
	}
	for _, c := range cases {
		r := &recorder{TB: t}
		CheckUnwrapper(r, c.w, in)
		if (r.failed == "") != c.ok {
			t.Errorf("%s: failure %q, want ok=%v", c.name, r.failed, c.ok)
		}
	}
}

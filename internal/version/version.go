// Package version reports what a binary was built from: the module
// version, the VCS commit and time that `go build` stamped into it, the Go
// version and the build tags. Both rdmablkd and rdmablk print it for
// --version; rdmablkd exports it as the rdmablk_build_info metric.
//
// Pure functions over runtime/debug.ReadBuildInfo; no goroutines, no
// state. It imports nothing of rdmablk, so any layer may use it.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Info describes the running binary.
type Info struct {
	// Version is the main module's version ("(devel)" for a build from a
	// work tree, "v1.2.3" for `go install …@v1.2.3`).
	Version string `json:"version"`
	// Commit is the VCS revision (with "-dirty" when the tree had local
	// changes), "unknown" when the build did not stamp one (go run, go test,
	// -buildvcs=false).
	Commit string `json:"commit"`
	// CommitTime is the revision's commit time (RFC 3339), "" when unknown.
	CommitTime string `json:"commit_time,omitempty"`
	// GoVersion is the toolchain that built the binary.
	GoVersion string `json:"go_version"`
	// Tags are the build tags (-tags), comma separated, "" for none.
	Tags string `json:"tags"`
}

// Get reads the running binary's build information.
func Get() Info {
	i := Info{Version: "unknown", Commit: "unknown", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return i
	}
	if v := bi.Main.Version; v != "" {
		i.Version = v
	}
	if bi.GoVersion != "" {
		i.GoVersion = bi.GoVersion
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Commit = s.Value
		case "vcs.time":
			i.CommitTime = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		case "-tags":
			i.Tags = s.Value
		}
	}
	if dirty && i.Commit != "unknown" {
		i.Commit += "-dirty"
	}
	return i
}

// String is the one line --version prints after the program name:
// "(devel) commit 1da3cb6… (2026-11-24T16:00:00Z) go1.26.8 tags ibverbs".
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s commit %s", i.Version, i.Commit)
	if i.CommitTime != "" {
		fmt.Fprintf(&b, " (%s)", i.CommitTime)
	}
	fmt.Fprintf(&b, " %s", i.GoVersion)
	if i.Tags != "" {
		fmt.Fprintf(&b, " tags %s", i.Tags)
	} else {
		b.WriteString(" tags none")
	}
	return b.String()
}

package main

import (
	"fmt"
	"regexp"
	"strings"
)

// versus is what an A/B run (test/lab/run.sh BASELINE=REV perf) compared: two rdmablkd builds,
// the scenario's impl "ours" being the new one and impl "kernel" the baseline, no kernel target.
// It comes from the run's file "versus" (guest/scenario-perf-target.sh with lab.vs=base): the
// lines "new LABEL" and "base LABEL", each LABEL a build-info line such as "commit `7adfa84`".
type versus struct {
	newBuild, baseBuild string // the build-info lines, as written
}

// parseVersus reads the file "versus"; both lines must be there, once each.
func parseVersus(b []byte) (*versus, error) {
	v := &versus{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		side, label, _ := strings.Cut(strings.TrimSpace(line), " ")
		label = strings.TrimSpace(label)
		var dst *string
		switch side {
		case "new":
			dst = &v.newBuild
		case "base":
			dst = &v.baseBuild
		default:
			return nil, fmt.Errorf("versus: line %q: want \"new LABEL\" or \"base LABEL\"", line)
		}
		if *dst != "" || label == "" {
			return nil, fmt.Errorf("versus: line %q: a second or empty %s label", line, side)
		}
		*dst = label
	}
	if v.newBuild == "" || v.baseBuild == "" {
		return nil, fmt.Errorf("versus: want a \"new LABEL\" and a \"base LABEL\" line, have %q", strings.TrimSpace(string(b)))
	}
	return v, nil
}

var commitRE = regexp.MustCompile("commit `?([0-9a-f]{4,40})`?")

// shortCommit is the commit a build-info line names ("" when it names none).
func shortCommit(build string) string {
	if m := commitRE.FindStringSubmatch(build); m != nil {
		return m[1]
	}
	return ""
}

// column is a side's table heading: "new (7adfa84)", or just the side without a commit.
func column(side, build string) string {
	if c := shortCommit(build); c != "" {
		return side + " (" + c + ")"
	}
	return side
}

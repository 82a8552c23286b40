package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchFlags: values bench cannot honour are refused naming the flag;
// a --qd above the negotiated queue depth runs at that depth and says so.
func TestBenchFlags(t *testing.T) {
	addr := startTarget(t, nil, "nqn.2026-11.io.rdmablk:bench")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rwmix", "101"}, "--rwmix 101: want a percentage of reads from 0 to 100"},
		{[]string{"--rwmix", "-1"}, "--rwmix -1"},
		{[]string{"--runtime", "0"}, "--runtime 0s: want a positive duration"},
		{[]string{"--qd", "0"}, "--qd 0: want at least 1"},
		{[]string{"--rw", "randread"}, `--rw "randread": want read, write or mixed`},
	} {
		err := runCLI(t, addr, append([]string{"bench", "-q"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bench %v: %v, want %q", tc.args, err, tc.want)
		}
	}

	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetArgs([]string{"-a", addr, "--provider", "soft", "--hostnqn", "nqn.2026-11.io.rdmablk:test-host",
		"--hostid", "01234567-89ab-4cde-8f01-23456789abcd", "bench", "--qd", "100000", "--runtime", "50ms", "--json"})
	root.SetOut(&out)
	root.SetErr(&errOut)
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var res struct {
		QD          int `json:"qd"`
		QDRequested int `json:"qd_requested"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if res.QDRequested != 100000 || res.QD <= 0 || res.QD >= 100000 {
		t.Errorf("qd %d of %d requested", res.QD, res.QDRequested)
	}
	if !strings.Contains(errOut.String(), "--qd 100000 is more than the I/O queue holds: ran at qd=") {
		t.Errorf("stderr %q does not say which depth ran", errOut.String())
	}
	if strings.Contains(errOut.String(), "\r") {
		t.Errorf("progress line written although stderr is not a terminal: %q", errOut.String())
	}
}

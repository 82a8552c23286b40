package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// checkKeys walks decoded JSON and reports every key that is not
// snake_case.
func checkKeys(t *testing.T, cmd string, v any, path string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if !snakeCase.MatchString(k) {
				t.Errorf("%s --json: key %s.%s is not snake_case", cmd, path, k)
			}
			checkKeys(t, cmd, e, path+"."+k)
		}
	case []any:
		for _, e := range x {
			checkKeys(t, cmd, e, path+"[]")
		}
	}
}

// TestJSONOutput: --json prints snake_case keys and enumerations as
// names; without --json nothing is JSON.
func TestJSONOutput(t *testing.T) {
	addr := startTarget(t, nil, "nqn.2026-11.io.rdmablk:json")
	cases := []struct {
		args  []string
		names map[string]string // dotted path → wanted name
	}{
		{[]string{"identify"}, map[string]string{"controller_type": "io", "subnqn": "nqn.2026-11.io.rdmablk:json"}},
		{[]string{"discover"}, nil},
		{[]string{"bench", "--runtime", "50ms", "--qd", "2", "-q"}, map[string]string{"rw": "read", "pattern": "rand"}},
	}
	for _, tc := range cases {
		t.Run(tc.args[0], func(t *testing.T) {
			text := runCLIOut(t, addr, tc.args...)
			if json.Valid([]byte(text)) || strings.HasPrefix(strings.TrimSpace(text), "{") {
				t.Errorf("%s without --json printed JSON:\n%s", tc.args[0], text)
			}
			out := runCLIOut(t, addr, append(tc.args, "--json")...)
			var v map[string]any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("%s --json: %v\n%s", tc.args[0], err, out)
			}
			checkKeys(t, tc.args[0], v, "")
			for k, want := range tc.names {
				if got := v[k]; got != want {
					t.Errorf("%s --json: %s = %v, want %q", tc.args[0], k, got, want)
				}
			}
			if tc.args[0] == "discover" {
				recs, _ := v["records"].([]any)
				if len(recs) == 0 {
					t.Fatalf("no records: %s", out)
				}
				for _, r := range recs {
					m := r.(map[string]any)
					if m["trtype"] != "rdma" || m["adrfam"] != "ipv4" || m["subtype"] == nil {
						t.Errorf("record enums not names: %v", m)
					}
				}
			}
		})
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHostIdentity(t *testing.T) {
	const (
		fileNQN = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-4333-8444-555555555555"
		fileID  = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
	)
	type files struct{ nqn, id, machine string }
	cases := []struct {
		name       string
		files      files
		flagNQN    string
		flagID     string
		wantNQN    string // "" : the UUID form of the ID
		wantID     string // "" : any, checked stable
		wantSource string
		wantErr    string
	}{
		{name: "EtcFiles", files: files{fileNQN, fileID, "m"}, wantNQN: fileNQN, wantID: fileID, wantSource: "/hostnqn, host ID from "},
		{name: "EtcNQNOnlyGivesID", files: files{nqn: fileNQN}, wantNQN: fileNQN, wantID: "11111111-2222-4333-8444-555555555555"},
		{name: "FlagsOverride", files: files{fileNQN, fileID, ""}, flagNQN: "nqn.2026-11.io.example:h1", flagID: "01234567-89ab-4cde-8f01-23456789abcd",
			wantNQN: "nqn.2026-11.io.example:h1", wantID: "01234567-89ab-4cde-8f01-23456789abcd", wantSource: "--hostnqn"},
		{name: "MachineID", files: files{machine: "0123456789abcdef0123456789abcdef"}, wantSource: "derived from"},
		{name: "StoredWhenNothingElse", wantSource: "rdmablk/hostid"},
		{name: "BadHostID", flagID: "nope", wantErr: `host ID "nope" (from --hostid): want a UUID`},
		{name: "BadHostNQNFile", files: files{nqn: "not an nqn"}, wantErr: `not a valid NQN`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			put := func(name, body string) string {
				p := filepath.Join(dir, name)
				if body != "" {
					if err := os.WriteFile(p, []byte(body+"\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return p
			}
			saved := identityFiles
			t.Cleanup(func() { identityFiles = saved })
			identityFiles.hostNQN = put("hostnqn", tc.files.nqn)
			identityFiles.hostID = put("hostid", tc.files.id)
			identityFiles.machineID = put("machine-id", tc.files.machine)
			identityFiles.storeDir = func() (string, error) { return filepath.Join(dir, "config", "rdmablk"), nil }
			resolve := func() (*globals, string, error) {
				var note bytes.Buffer
				g := &globals{hostnqn: tc.flagNQN, hostid: tc.flagID, stderr: &note}
				err := g.identity()
				return g, note.String(), err
			}
			g, note, err := resolve()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			id := formatUUID(g.ident.ID)
			if tc.wantID != "" && id != tc.wantID {
				t.Errorf("host ID %s, want %s", id, tc.wantID)
			}
			wantNQN := tc.wantNQN
			if wantNQN == "" {
				wantNQN = "nqn.2014-08.org.nvmexpress:uuid:" + id
			}
			if g.ident.NQN != wantNQN {
				t.Errorf("host NQN %s, want %s", g.ident.NQN, wantNQN)
			}
			if !strings.Contains(g.ident.Source, tc.wantSource) {
				t.Errorf("source %q, want it to mention %q", g.ident.Source, tc.wantSource)
			}
			// Stable: a second resolution gives the same identity, and only
			// the first generation says where it stored the ID.
			g2, note2, err := resolve()
			if err != nil || g2.ident.ID != g.ident.ID || g2.ident.NQN != g.ident.NQN {
				t.Errorf("second resolution %+v (%v), first %+v", g2.ident, err, g.ident)
			}
			stored := tc.name == "StoredWhenNothingElse"
			if stored != strings.Contains(note, "stored in") || note2 != "" {
				t.Errorf("notes %q then %q", note, note2)
			}
		})
	}
}

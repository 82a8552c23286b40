package auth

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// recorded runs one transaction between our Host and a recording
// Controller and returns the finished transcript, JSON round-tripped.
func recorded(t *testing.T, hc HostConfig, cc ControllerConfig) *Transcript {
	t.Helper()
	if cc.HostNQN == "" {
		cc.HostNQN, cc.SubNQN = tHostNQN, tSubNQN
	}
	if hc.HostNQN == "" {
		hc.HostNQN, hc.SubNQN = tHostNQN, tSubNQN
	}
	h, err := NewHost(hc, 7)
	if err != nil {
		t.Fatal(err)
	}
	c, tr, err := RecordController(cc)
	if err != nil {
		t.Fatal(err)
	}
	run(t, h, c)
	tr.Finish(c)
	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	var back Transcript
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return &back
}

func TestTranscriptReplay(t *testing.T) {
	ks := secretN(0x5a, HashSHA256, 32)
	cs := secretN(0xa5, HashSHA384, 48)
	for _, tc := range []struct {
		name   string
		g      DHGroupID
		bidir  bool
		wrongH bool
	}{
		{"null", DHNull, false, false},
		{"ffdhe2048", FFDHE2048, false, false},
		{"ffdhe3072-bidirectional", FFDHE3072, true, false},
		{"null-wrong-secret", DHNull, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hc := HostConfig{Secret: ks}
			cc := ControllerConfig{Secret: ks, DHGroups: []DHGroupID{tc.g}}
			if tc.bidir {
				hc.CtrlSecret, cc.CtrlSecret = &cs, &cs
			}
			if tc.wrongH {
				hc.Secret = secretN(0x5b, HashSHA256, 32)
			}
			tr := recorded(t, hc, cc)
			want := TranscriptAuthenticated
			if tc.wrongH {
				want = tr.Result
				if want == TranscriptAuthenticated {
					t.Fatal("a wrong host secret authenticated")
				}
			}
			if tr.Result != want {
				t.Fatalf("result %q", tr.Result)
			}
			if err := tr.Replay(); err != nil {
				t.Fatalf("replay: %v", err)
			}
			if tc.wrongH {
				return
			}
			// The replay must check the host's response: a flipped bit in
			// R (offset 16 of the DH-HMAC-CHAP_Reply) fails it.
			for i, m := range tr.Messages {
				if m.From != FromHost || i == 0 {
					continue
				}
				b, _ := hex.DecodeString(m.Hex)
				h, _ := ParseHeader(b)
				if h.ID != MsgReply {
					continue
				}
				b[16] ^= 1
				bad := *tr
				bad.Messages = append([]TranscriptMessage(nil), tr.Messages...)
				bad.Messages[i].Hex = hex.EncodeToString(b)
				if err := bad.Replay(); err == nil {
					t.Fatal("replay accepted a corrupted reply")
				}
				return
			}
			t.Fatal("no DH-HMAC-CHAP_Reply in the transcript")
		})
	}
}

// TestKernelTranscripts replays every transcript captured in the lab with
// a Linux host on the other side (testdata/transcripts-*.jsonl, written by
// rdmablkd's target.dhchap_transcript): the Linux host's replies — its
// key transformation, response and, with an ffdhe group, its session key
// from our public value — must check, and our messages must come out byte
// for byte.
func TestKernelTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/transcripts-*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skip("no captured transcripts")
	}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var tr Transcript
			if err := json.Unmarshal(line, &tr); err != nil {
				t.Fatalf("%s:%d: %v", f, i+1, err)
			}
			if err := tr.Replay(); err != nil {
				t.Errorf("%s:%d (%s): %v", f, i+1, tr.Source, err)
			}
			n++
		}
	}
	t.Logf("%d transcripts from %d files replayed", n, len(files))
}

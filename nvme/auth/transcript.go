package auth

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// Transcript is a controller-side record of one queue's DH-HMAC-CHAP
// exchange: the configuration, every byte the controller read from its
// random source and every message in order. Replaying it through a new
// Controller fed with the same random bytes must reproduce the exchange
// exactly, so a transcript taken with a Linux host on the other side is a
// golden vector computed by Linux: the host's DH-HMAC-CHAP_Reply (its
// response R1, made with its own key transformation and, for an ffdhe
// group, its own session key derivation from our public value) is checked
// by our code, and our Success1 must come out byte for byte.
//
// A transcript holds both secrets and the controller's DH exponent:
// anyone holding it can impersonate the host and recompute the session
// key. It is for the lab and tests with throw-away keys only.
type Transcript struct {
	Source     string   `json:"source,omitempty"` // where and how it was captured (free text)
	HostNQN    string   `json:"hostnqn"`
	SubNQN     string   `json:"subnqn"`
	HostSecret string   `json:"host_secret"`           // DHHC-1 representation
	CtrlSecret string   `json:"ctrl_secret,omitempty"` // DHHC-1, bidirectional only
	Hashes     []string `json:"hashes,omitempty"`      // controller preference (names); empty accepts all
	DHGroups   []string `json:"dhgroups,omitempty"`
	// Rand is the hex of every byte the controller read from its random
	// source (challenges, sequence numbers, DH exponents), in order.
	Rand     string              `json:"rand"`
	Messages []TranscriptMessage `json:"messages"`
	// Result is "authenticated" or the controller's failure.
	Result string `json:"result"`

	rand bytes.Buffer
}

// TranscriptMessage is one Authentication Send ("host") or Receive
// ("ctrl") payload, as hex.
type TranscriptMessage struct {
	From string `json:"from"`
	Hex  string `json:"hex"`
}

// Transcript message origins.
const (
	FromHost = "host"
	FromCtrl = "ctrl"
)

// TranscriptAuthenticated is Transcript.Result of a successful exchange.
const TranscriptAuthenticated = "authenticated"

// RecordController is NewController that also fills a Transcript as the
// exchange goes (Finish completes it). Same concurrency rules as the
// Controller: the transcript belongs to the controller's goroutine until
// Finish.
func RecordController(cfg ControllerConfig) (*Controller, *Transcript, error) {
	t := &Transcript{HostNQN: cfg.HostNQN, SubNQN: cfg.SubNQN, HostSecret: cfg.Secret.Encode()}
	for _, h := range cfg.Hashes {
		t.Hashes = append(t.Hashes, h.String())
	}
	for _, g := range cfg.DHGroups {
		t.DHGroups = append(t.DHGroups, g.String())
	}
	if cfg.CtrlSecret != nil {
		t.CtrlSecret = cfg.CtrlSecret.Encode()
	}
	src := cfg.Rand
	if src == nil {
		src = defaultRand
	}
	cfg.Rand = io.TeeReader(src, &t.rand)
	c, err := NewController(cfg)
	if err != nil {
		return nil, nil, err
	}
	c.rec = t
	return c, t, nil
}

// record appends one message (the controller calls it).
func (t *Transcript) record(from string, b []byte) {
	t.Messages = append(t.Messages, TranscriptMessage{From: from, Hex: hex.EncodeToString(b)})
}

// Finish fills Rand and Result from c, the controller RecordController
// returned with t.
func (t *Transcript) Finish(c *Controller) {
	t.Rand = hex.EncodeToString(t.rand.Bytes())
	t.Result = outcome(c)
}

// outcome is a Transcript.Result for c's state.
func outcome(c *Controller) string {
	switch {
	case c.Authenticated() && !c.Failed():
		return TranscriptAuthenticated
	case c.Err() != nil:
		return "failed: " + c.Err().Error()
	}
	return "incomplete"
}

// Replay runs the transcript through a fresh Controller fed with the
// recorded random bytes: every host message is sent, every controller
// message must come out identical, and the outcome must match Result. It
// returns the first divergence.
func (t *Transcript) Replay() error {
	hs, err := ParseSecret(t.HostSecret)
	if err != nil {
		return fmt.Errorf("host secret: %w", err)
	}
	cfg := ControllerConfig{HostNQN: t.HostNQN, SubNQN: t.SubNQN, Secret: hs}
	for _, n := range t.Hashes {
		h, err := ParseHash(n)
		if err != nil {
			return err
		}
		cfg.Hashes = append(cfg.Hashes, h)
	}
	for _, n := range t.DHGroups {
		g, err := ParseDHGroup(n)
		if err != nil {
			return err
		}
		cfg.DHGroups = append(cfg.DHGroups, g)
	}
	if t.CtrlSecret != "" {
		cs, err := ParseSecret(t.CtrlSecret)
		if err != nil {
			return fmt.Errorf("controller secret: %w", err)
		}
		cfg.CtrlSecret = &cs
	}
	rnd, err := hex.DecodeString(t.Rand)
	if err != nil {
		return fmt.Errorf("rand: %w", err)
	}
	cfg.Rand = bytes.NewReader(rnd)
	c, err := NewController(cfg)
	if err != nil {
		return err
	}
	for i, m := range t.Messages {
		b, err := hex.DecodeString(m.Hex)
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		switch m.From {
		case FromHost:
			var f *Failure
			if err := c.Send(b); err != nil && !errors.As(err, &f) && t.Result == TranscriptAuthenticated {
				return fmt.Errorf("message %d (host %v): %w", i, msgID(b), err)
			}
		case FromCtrl:
			out, err := c.Receive()
			if err != nil {
				return fmt.Errorf("message %d (ctrl): %w", i, err)
			}
			if !bytes.Equal(out, b) {
				return fmt.Errorf("message %d (ctrl %v): ours %x, recorded %x", i, msgID(b), out, b)
			}
		default:
			return fmt.Errorf("message %d: from %q", i, m.From)
		}
	}
	if got := outcome(c); got != t.Result {
		return fmt.Errorf("replay ends %q, recorded %q", got, t.Result)
	}
	return nil
}

// msgID names a message for errors (its ID, or "?" if unreadable).
func msgID(b []byte) string {
	h, err := ParseHeader(b)
	if err != nil {
		return "?"
	}
	return h.ID.String()
}

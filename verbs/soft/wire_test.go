package soft

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/rdmablk/rdmablk/verbs"
)

func TestHeaderGolden(t *testing.T) {
	h := header{typ: frameWrite, flags: flagImm, msn: 0x04030201, length: 0x1000,
		rkey: 0xa1b2c3d4, raddr: 0x1122334455667788, imm: 0xcafebabe}
	var b [headerLen]byte
	h.encode(b[:])
	want := "06010000" + "01020304" + "00100000" + "d4c3b2a1" + "8877665544332211" + "bebafeca" + "00000000"
	if got := hex.EncodeToString(b[:]); got != want {
		t.Fatalf("encoded header\n got %s\nwant %s", got, want)
	}
	var d header
	if err := d.decode(b[:]); err != nil || d != h {
		t.Fatalf("decode: %+v, %v", d, err)
	}
	if headerLen != 32 {
		t.Fatalf("header size %d", headerLen)
	}
}

func TestHeaderRejects(t *testing.T) {
	cases := map[string]header{
		"unknown type":         {typ: 0},
		"type beyond":          {typ: frameMax + 1},
		"ACK with payload":     {typ: frameAck, length: 1},
		"NAK without syndrome": {typ: frameNak},
		"NAK bad syndrome":     {typ: frameNak, syn: synMax + 1},
		"syndrome on SEND":     {typ: frameSend, syn: synRNR},
		"SEND imm and inv":     {typ: frameSend, flags: flagImm | flagInv, imm: 1},
		"WRITE with inv":       {typ: frameWrite, flags: flagInv},
		"rkey on SEND":         {typ: frameSend, rkey: 5},
		"imm without flag":     {typ: frameSend, imm: 5},
		"READ with payload":    {typ: frameReadReq, length: 8},
		"READ too long":        {typ: frameReadReq, imm: maxMessage + 1},
		"payload too long":     {typ: frameSend, length: maxMessage + 1},
		"REQ too short":        {typ: frameReq, length: cmFixedLen - 1},
		"REQ too long":         {typ: frameReq, length: cmFixedLen + verbs.MaxPrivateData + 1},
		"REJ too long":         {typ: frameRej, length: verbs.MaxRejectPrivateData + 1},
		"consumer flag on REP": {typ: frameRep, flags: flagConsumer, length: cmFixedLen},
	}
	for name, h := range cases {
		var b [headerLen]byte
		h.encode(b[:])
		var d header
		if err := d.decode(b[:]); !errors.Is(err, errProtocol) {
			t.Errorf("%s: decode returned %v", name, err)
		}
	}
	var b [headerLen]byte
	(&header{typ: frameAck}).encode(b[:])
	b[3] = 1
	if err := new(header).decode(b[:]); !errors.Is(err, errProtocol) {
		t.Errorf("reserved byte: %v", err)
	}
	if err := new(header).decode(b[:10]); !errors.Is(err, errProtocol) {
		t.Errorf("short header: %v", err)
	}
}

func TestCMGolden(t *testing.T) {
	p := verbs.ConnParam{PrivateData: []byte{0xaa, 0xbb}, ResponderResources: 16, InitiatorDepth: 8,
		RetryCount: 7, RNRRetryCount: 6, FlowControl: true}
	b := appendCM(nil, 0x00abcdef, &p)
	want := "534e4943" + "01" + "10" + "08" + "07" + "06" + "01" + "02" + "00" + "efcdab00" + "aabb"
	if got := hex.EncodeToString(b); got != want {
		t.Fatalf("CM payload\n got %s\nwant %s", got, want)
	}
	c, err := decodeCM(b)
	if err != nil || c.qpn != 0xabcdef || c.param.ResponderResources != 16 || c.param.InitiatorDepth != 8 ||
		c.param.RetryCount != 7 || c.param.RNRRetryCount != 6 || !c.param.FlowControl || !bytes.Equal(c.param.PrivateData, p.PrivateData) {
		t.Fatalf("decodeCM: %+v, %v", c, err)
	}
	for name, mut := range map[string]func([]byte) []byte{
		"magic":      func(b []byte) []byte { b[0]++; return b },
		"version":    func(b []byte) []byte { b[4] = 2; return b },
		"rnr":        func(b []byte) []byte { b[8] = 8; return b },
		"flow":       func(b []byte) []byte { b[9] = 2; return b },
		"length":     func(b []byte) []byte { b[10] = 3; return b },
		"reserved":   func(b []byte) []byte { b[11] = 1; return b },
		"truncated":  func(b []byte) []byte { return b[:cmFixedLen-1] },
		"long data":  func(b []byte) []byte { return append(b, 0) },
		"huge count": func(b []byte) []byte { b[10] = verbs.MaxPrivateData + 1; return b },
	} {
		if _, err := decodeCM(mut(append([]byte(nil), b...))); !errors.Is(err, errProtocol) {
			t.Errorf("%s: decodeCM returned %v", name, err)
		}
	}
}

func FuzzHeader(f *testing.F) {
	var b [headerLen]byte
	for _, h := range []header{
		{typ: frameSend, flags: flagImm, msn: 3, length: 100, imm: 9},
		{typ: frameReadReq, rkey: 1, raddr: 2, imm: 4096},
		{typ: frameNak, syn: synRNR, msn: 7},
		{typ: frameReq, length: cmFixedLen + 4},
	} {
		h.encode(b[:])
		f.Add(append([]byte(nil), b[:]...))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var h header
		if err := h.decode(in); err != nil {
			if !errors.Is(err, errProtocol) {
				t.Fatalf("error %v does not wrap errProtocol", err)
			}
			return
		}
		var out [headerLen]byte
		h.encode(out[:])
		if !bytes.Equal(out[:], in[:headerLen]) {
			t.Fatalf("round trip changed %x to %x", in[:headerLen], out)
		}
	})
}

func FuzzCM(f *testing.F) {
	f.Add(appendCM(nil, 5, &verbs.ConnParam{PrivateData: make([]byte, 32), RNRRetryCount: 7}))
	f.Add(appendCM(nil, 0, &verbs.ConnParam{}))
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := decodeCM(in)
		if err != nil {
			if !errors.Is(err, errProtocol) {
				t.Fatalf("error %v does not wrap errProtocol", err)
			}
			return
		}
		if out := appendCM(nil, c.qpn, &c.param); !bytes.Equal(out, in) {
			t.Fatalf("round trip changed %x to %x", in, out)
		}
	})
}

package soft

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/verbs"
)

// rawPeer speaks the wire protocol by hand over TCP, to feed a soft
// provider frames no soft NIC would send.
type rawPeer struct {
	t    *testing.T
	conn net.Conn
	fr   *frameReader
	fw   *frameWriter
}

func dialRaw(t *testing.T, addr string) *rawPeer {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawPeer{t: t, conn: c, fr: newFrameReader(c), fw: newFrameWriter(c)}
}

func (r *rawPeer) send(h header, payload []byte) {
	r.t.Helper()
	h.length = uint32(len(payload))
	if err := r.fw.frame(&h, payload); err != nil {
		r.t.Fatal(err)
	}
	if err := r.fw.flush(); err != nil {
		r.t.Fatal(err)
	}
}

// serverSide accepts one request on ln with a fresh QP holding one posted
// receive, answering in the background; accepted reports the result.
type serverSide struct {
	id       verbs.ConnID
	rcq      verbs.CompletionQueue
	qp       verbs.QueuePair
	accepted chan error
}

func acceptOne(t *testing.T, ctx context.Context, ln verbs.Listener) *serverSide {
	t.Helper()
	req, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := req.ID.Device()
	pd, _ := d.AllocPD()
	cq, _ := d.CreateCQ(16, 0)
	qp, err := req.ID.CreateQP(pd, verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq, Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	mr, err := pd.RegisterMemory(make([]byte, 4096), verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qp.PostRecv([]verbs.RecvWR{{ID: 1, SGL: []verbs.SGE{{Addr: mr.Addr(), Length: 4096, LKey: mr.LKey()}}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		req.ID.Close()
		mr.Close()
		cq.Close()
		pd.Close()
	})
	s := &serverSide{id: req.ID, rcq: cq, qp: qp, accepted: make(chan error, 1)}
	go func() {
		s.accepted <- req.ID.Accept(ctx, verbs.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RNRRetryCount: 7})
	}()
	return s
}

func pollOne(t *testing.T, ctx context.Context, cq verbs.CompletionQueue) verbs.WorkCompletion {
	t.Helper()
	var wc [1]verbs.WorkCompletion
	for {
		n, err := cq.Poll(wc[:])
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return wc[0]
		}
		if err := verbs.Wait(ctx, cq); err != nil {
			t.Fatalf("no completion: %v", err)
		}
	}
}

func TestHostilePeer(t *testing.T) {
	cases := map[string]func(r *rawPeer){
		"GarbageHeader": func(r *rawPeer) { r.conn.Write(make([]byte, headerLen)) },
		"WrongMSN": func(r *rawPeer) {
			r.send(header{typ: frameSend, msn: 5}, []byte("out of order"))
		},
		"AckNeverSent": func(r *rawPeer) { r.send(header{typ: frameAck, msn: 3}, nil) },
		"ReadResponseNeverAsked": func(r *rawPeer) {
			r.send(header{typ: frameReadResp, msn: 0}, []byte("x"))
		},
		"CMFrameAfterHandshake": func(r *rawPeer) { r.send(header{typ: frameRTU}, nil) },
		"TruncatedPayload": func(r *rawPeer) {
			h := header{typ: frameSend, length: 100}
			var b [headerLen]byte
			h.encode(b[:])
			r.conn.Write(append(b[:], "short"...))
			r.conn.(*net.TCPConn).CloseWrite()
		},
	}
	for name, attack := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			p := New(Options{})
			defer p.Close()
			ln, err := p.Listen("127.0.0.1:0", verbs.ListenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()

			// Junk before any handshake is dropped by the listener.
			junk := dialRaw(t, ln.Addr())
			junk.conn.Write(make([]byte, 3*headerLen))

			// A well-behaved raw peer first, to prove data flows.
			good := dialRaw(t, ln.Addr())
			good.send(header{typ: frameReq}, appendCM(nil, 1, &verbs.ConnParam{RNRRetryCount: 7}))
			gs := acceptOne(t, ctx, ln)
			var h header
			if err := good.fr.next(&h); err != nil || h.typ != frameRep {
				t.Fatalf("REP: %+v %v", h, err)
			}
			good.fr.discard(h.length)
			good.send(header{typ: frameRTU}, nil)
			if err := <-gs.accepted; err != nil {
				t.Fatal(err)
			}

			bad := dialRaw(t, ln.Addr())
			bad.send(header{typ: frameReq}, appendCM(nil, 77, &verbs.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RNRRetryCount: 7}))
			bs := acceptOne(t, ctx, ln)
			if err := bad.fr.next(&h); err != nil || h.typ != frameRep {
				t.Fatalf("REP: %+v %v", h, err)
			}
			bad.fr.discard(h.length)
			bad.send(header{typ: frameRTU}, nil)
			if err := <-bs.accepted; err != nil {
				t.Fatal(err)
			}
			attack(bad)

			select {
			case <-bs.id.Done():
			case <-ctx.Done():
				t.Fatal("connection survived a protocol violation")
			}
			if !errors.Is(bs.id.Err(), verbs.ErrDisconnected) {
				t.Fatalf("Err %v", bs.id.Err())
			}
			if wc := pollOne(t, ctx, bs.rcq); wc.Status != verbs.WCWRFlushErr {
				t.Fatalf("receive after the violation: %+v", wc)
			}

			// The good connection is untouched: its SEND lands and is ACKed.
			good.send(header{typ: frameSend, msn: 0}, []byte("still here"))
			if wc := pollOne(t, ctx, gs.rcq); wc.Status != verbs.WCSuccess || wc.ByteLen != 10 {
				t.Fatalf("good connection receive %+v", wc)
			}
			if err := good.fr.next(&h); err != nil || h.typ != frameAck || h.msn != 0 {
				t.Fatalf("good connection ACK %+v: %v", h, err)
			}
			if gs.id.Err() != nil {
				t.Fatalf("good connection Err %v", gs.id.Err())
			}
		})
	}
}

func TestRNRGoBackN(t *testing.T) {
	// A raw requester sends SEND 0, WRITE 1; the responder has no receive:
	// RNR NAK for 0, WRITE 1 dropped until 0 comes again.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := New(Options{})
	defer p.Close()
	ln, err := p.Listen("127.0.0.1:0", verbs.ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := dialRaw(t, ln.Addr())
	r.send(header{typ: frameReq}, appendCM(nil, 1, &verbs.ConnParam{RNRRetryCount: 7}))
	req, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer req.ID.Close()
	d := req.ID.Device()
	pd, _ := d.AllocPD()
	cq, _ := d.CreateCQ(16, 0)
	qp, err := req.ID.CreateQP(pd, verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq, Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4}})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	mr, _ := pd.RegisterMemory(buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	accepted := make(chan error, 1)
	go func() { accepted <- req.ID.Accept(ctx, verbs.ConnParam{RNRRetryCount: 7}) }()
	r.handshakeReply(t)
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
	r.send(header{typ: frameSend, msn: 0}, []byte("first"))
	r.send(header{typ: frameWrite, msn: 1, rkey: mr.RKey(), raddr: mr.Addr()}, []byte("dropped"))
	var h header
	if err := r.fr.next(&h); err != nil || h.typ != frameNak || h.syn != synRNR || h.msn != 0 {
		t.Fatalf("want RNR NAK of 0, got %+v %v", h, err)
	}
	if _, err := qp.PostRecv([]verbs.RecvWR{{ID: 9, SGL: []verbs.SGE{{Addr: mr.Addr() + 100, Length: 64, LKey: mr.LKey()}}}}); err != nil {
		t.Fatal(err)
	}
	r.send(header{typ: frameSend, msn: 0}, []byte("first"))
	r.send(header{typ: frameWrite, msn: 1, rkey: mr.RKey(), raddr: mr.Addr()}, []byte("written"))
	if wc := pollOne(t, ctx, cq); wc.ID != 9 || wc.Status != verbs.WCSuccess {
		t.Fatalf("receive %+v", wc)
	}
	// Cumulative ACK (possibly preceded by one for 0) up to 1.
	for {
		if err := r.fr.next(&h); err != nil || h.typ != frameAck {
			t.Fatalf("want ACK, got %+v %v", h, err)
		}
		if h.msn == 1 {
			break
		}
	}
	if string(buf[:7]) != "written" || string(buf[100:105]) != "first" {
		t.Fatalf("memory %q / %q: the dropped WRITE must not land", buf[:7], buf[100:105])
	}
	st, _ := Stats(qp)
	if st.RNRNaksSent != 1 {
		t.Fatalf("RNR NAKs sent %d", st.RNRNaksSent)
	}
	r.conn.Close() // the raw peer answers no DISC: let the link end at once
	qp.Close()
	mr.Close()
	cq.Close()
	pd.Close()
}

// handshakeReply reads the REP and sends RTU (the REQ was sent already).
func (r *rawPeer) handshakeReply(t *testing.T) {
	t.Helper()
	var h header
	if err := r.fr.next(&h); err != nil || h.typ != frameRep {
		t.Fatalf("REP: %+v %v", h, err)
	}
	r.fr.discard(h.length)
	r.send(header{typ: frameRTU}, nil)
}

package nvme

import (
	"errors"
	"testing"
)

// TestCMRequest: RECFMT 0, QID 2, HRQSIZE 4, HSQSIZE 6, CNTLID 8, 22
// reserved bytes (NVMe-oF §7.3.2 Figure 57; 32 bytes).
func TestCMRequest(t *testing.T) {
	r := CMRequest{QID: 2, HRQSize: 128, HSQSize: 127, CNTLID: 0xFFFF}
	b := filled(CMRequestSize, 0xEE)
	if err := r.Marshal(b); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, CMRequestSize)
	put16(want, 2, 2)
	put16(want, 4, 128)
	put16(want, 6, 127)
	put16(want, 8, 0xFFFF)
	checkBytes(t, "CM request", b, want)
	got, err := ParseCMRequest(append(b, 0, 0)) // rdma_cm may pad
	if err != nil || got != r {
		t.Fatalf("round trip %+v %v", got, err)
	}
	if _, err := ParseCMRequest(b[:31]); !errors.Is(err, ErrShort) {
		t.Errorf("short: %v", err)
	}
	b[0] = 1
	if _, err := ParseCMRequest(b); !errors.Is(err, ErrBadRecfmt) {
		t.Errorf("recfmt 1: %v", err)
	}
	if err := r.Marshal(make([]byte, 31)); !errors.Is(err, ErrShort) {
		t.Errorf("short marshal: %v", err)
	}
}

// TestCMAccept: RECFMT 0, CRQSIZE 2, 28 reserved bytes (Figure 58).
func TestCMAccept(t *testing.T) {
	a := CMAccept{CRQSize: 128}
	b := filled(CMAcceptSize, 0xEE)
	if err := a.Marshal(b); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, CMAcceptSize)
	put16(want, 2, 128)
	checkBytes(t, "CM accept", b, want)
	got, err := ParseCMAccept(b)
	if err != nil || got != a {
		t.Fatalf("round trip %+v %v", got, err)
	}
	if _, err := ParseCMAccept(b[:3]); !errors.Is(err, ErrShort) {
		t.Errorf("short: %v", err)
	}
	b[1] = 1
	if _, err := ParseCMAccept(b); !errors.Is(err, ErrBadRecfmt) {
		t.Errorf("recfmt: %v", err)
	}
	if err := a.Marshal(make([]byte, 31)); !errors.Is(err, ErrShort) {
		t.Errorf("short marshal: %v", err)
	}
}

// TestCMReject: RECFMT 0, STS 2 (Figure 59; 4 bytes).
func TestCMReject(t *testing.T) {
	r := CMReject{Status: CMRejectInvalidHSQSize}
	b := filled(CMRejectSize, 0xEE)
	if err := r.Marshal(b); err != nil {
		t.Fatal(err)
	}
	checkBytes(t, "CM reject", b, []byte{0, 0, 4, 0})
	got, err := ParseCMReject(b)
	if err != nil || got != r {
		t.Fatalf("round trip %+v %v", got, err)
	}
	if _, err := ParseCMReject(b[:3]); !errors.Is(err, ErrShort) {
		t.Errorf("short: %v", err)
	}
	if err := r.Marshal(b[:3]); !errors.Is(err, ErrShort) {
		t.Errorf("short marshal: %v", err)
	}
	if CMRejectInvalidPrivateDataLen != 1 || CMRejectNoResources != 6 || CMRejectInvalidORD != 8 {
		t.Error("reject status values")
	}
}

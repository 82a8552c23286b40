package nvme

import (
	"strings"
	"testing"
)

func TestStatusFields(t *testing.T) {
	s := MakeStatus(SCTCommandSpecific, 0x84) | StatusMore | StatusDNR | Status(2<<11)
	if s.SCT() != 1 || s.SC() != 0x84 || s.CRD() != 2 || !s.More() || !s.DNR() {
		t.Fatalf("fields of %#x: sct %d sc %#x crd %d", uint16(s), s.SCT(), s.SC(), s.CRD())
	}
	if s.Code() != StatusConnectInvalidHost || s.OK() {
		t.Fatalf("Code %#x", uint16(s.Code()))
	}
	if uint16(s) != 0x1<<8|0x84|1<<13|1<<14|2<<11 {
		t.Fatalf("bit layout %#x", uint16(s))
	}
	if !StatusSuccess.OK() || !(StatusMore | StatusDNR).OK() {
		t.Fatal("success with flags must be OK")
	}
	if StatusInvalidField.WithDNR() != 0x4002 {
		t.Fatal("WithDNR")
	}
	if MakeStatus(0xFF, 0x01) != 0x701 {
		t.Fatal("MakeStatus masks SCT to 3 bits")
	}
}

func TestStatusString(t *testing.T) {
	for s, want := range map[Status]string{
		StatusInvalidField.WithDNR():     "invalid field in command (sct 0x0 sc 0x02, DNR)",
		StatusLBAOutOfRange | StatusMore: "LBA out of range (sct 0x0 sc 0x80, More)",
		StatusConnectInvalidHost:         "connect invalid host (sct 0x1 sc 0x84)",
		StatusANAInaccessible:            "asymmetric access inaccessible (sct 0x3 sc 0x02)",
		MakeStatus(SCTVendor, 0xC3):      "unknown status (sct 0x7 sc 0xc3)",
		StatusSuccess:                    "success (sct 0x0 sc 0x00)",
	} {
		if got := s.String(); got != want {
			t.Errorf("%#x: %q, want %q", uint16(s), got, want)
		}
	}
	var err error = StatusInternalError
	if !strings.HasPrefix(err.Error(), "nvme: internal error") {
		t.Errorf("Error() = %q", err.Error())
	}
}

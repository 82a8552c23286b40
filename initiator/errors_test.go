package initiator

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

func TestRejectErrorDecodesNVMeRejectData(t *testing.T) {
	var pd [nvme.CMRejectSize]byte
	rej := nvme.CMReject{Status: nvme.CMRejectInvalidHSQSize}
	if err := rej.Marshal(pd[:]); err != nil {
		t.Fatal(err)
	}
	verr := fmt.Errorf("connect: %w", &verbs.RejectError{PrivateData: pd[:], Consumer: true})
	err := rejectError(3, verr)
	var ce *ConnectRejectedError
	if !errors.As(err, &ce) {
		t.Fatalf("got %T %v, want *ConnectRejectedError", err, err)
	}
	if ce.QID != 3 || ce.Status != nvme.CMRejectInvalidHSQSize {
		t.Fatalf("got %+v", ce)
	}
	if msg := ce.Error(); !strings.Contains(msg, "HSQSIZE") || !strings.Contains(msg, "queue 3") {
		t.Fatalf("unreadable message %q", msg)
	}
}

func TestRejectErrorUnknownStatusStillTyped(t *testing.T) {
	pd := []byte{0, 0, 0x42, 0}
	err := rejectError(0, &verbs.RejectError{PrivateData: pd, Consumer: true})
	var ce *ConnectRejectedError
	if !errors.As(err, &ce) || ce.Status != 0x42 {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(ce.Error(), "unknown") {
		t.Fatalf("message %q", ce.Error())
	}
}

func TestRejectErrorWithoutPrivateDataIsUnchanged(t *testing.T) {
	in := &verbs.RejectError{Consumer: false}
	if err := rejectError(0, in); err != error(in) {
		t.Fatalf("got %v, want the verbs error unchanged", err)
	}
	other := errors.New("boom")
	if err := rejectError(0, other); err != other {
		t.Fatalf("got %v", err)
	}
}

func TestRejectErrorShortPrivateData(t *testing.T) {
	in := &verbs.RejectError{PrivateData: []byte{1}, Consumer: true}
	err := rejectError(1, in)
	var ce *ConnectRejectedError
	if errors.As(err, &ce) {
		t.Fatalf("short data decoded as %+v", ce)
	}
	var re *verbs.RejectError
	if !errors.As(err, &re) {
		t.Fatalf("verbs reject lost from chain: %v", err)
	}
}

func TestStatusErrorMatchesCodeIgnoringDNR(t *testing.T) {
	err := statusErr("connect", nvme.StatusConnectInvalidHost.WithDNR())
	if !errors.Is(err, nvme.StatusConnectInvalidHost) {
		t.Fatalf("errors.Is failed for %v", err)
	}
	if errors.Is(err, nvme.StatusConnectInvalidParam) {
		t.Fatalf("matched the wrong status")
	}
	var st nvme.Status
	if !errors.As(err, &st) || st != nvme.StatusConnectInvalidHost {
		t.Fatalf("errors.As got %v", st)
	}
	var se *StatusError
	if !errors.As(err, &se) || !se.Status.DNR() {
		t.Fatalf("full status lost: %+v", se)
	}
	if statusErr("x", nvme.StatusSuccess) != nil {
		t.Fatal("success is an error")
	}
}

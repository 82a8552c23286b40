//go:build ibverbs

package providers

import (
	"strings"
	"testing"
)

// 127.0.0.1 is never served by an RDMA device (rxe does not serve
// loopback), so "auto" must fall back to soft and say why, on any host.
func TestAutoFallsBackToSoftWithReason(t *testing.T) {
	p, reason, err := Open("auto", "default", []string{"127.0.0.1:4420"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "soft" || !strings.Contains(reason, "ibverbs unavailable") {
		t.Fatalf("auto chose %s (%s)", p.Name(), reason)
	}
	t.Log(reason)
	if _, _, err := Open("ibverbs", "default", []string{"127.0.0.1:4420"}); err == nil {
		t.Fatal("ibverbs served 127.0.0.1")
	}
}

package metrics

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/target"
)

func TestExposition(t *testing.T) {
	m := New()
	v := m.Volume("vol1")
	v.Observe(OpRead, 4096, time.Now(), nil)
	v.Observe(OpWrite, 512, time.Now(), errors.New("boom"))
	m.SetNamespace("nqn.2026-11.io.rdmablk:a", 3, "vol1", true)
	tg := target.New(target.Options{Workers: 1})
	defer tg.Close()
	m.WatchTarget(tg)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`rdmablk_volume_io_total{op="read",volume="vol1"} 1`,
		`rdmablk_volume_io_bytes_total{op="read",volume="vol1"} 4096`,
		`rdmablk_volume_io_errors_total{op="write",volume="vol1"} 1`,
		`rdmablk_volume_io_duration_seconds_count{op="read",volume="vol1"} 1`,
		`rdmablk_namespace_info{nqn="nqn.2026-11.io.rdmablk:a",nsid="3",volume="vol1"} 1`,
		`rdmablk_target_commands_total 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("missing %s", want)
		}
	}
	m.ForgetVolume("vol1")
	m.SetNamespace("nqn.2026-11.io.rdmablk:a", 3, "vol1", false)
}

func BenchmarkVolumeMeter(b *testing.B) {
	v := New().Volume("v")
	b.ReportAllocs()
	b.SetBytes(4096)
	for b.Loop() {
		v.Observe(OpRead, 4096, time.Now(), nil)
	}
}

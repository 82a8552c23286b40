package api

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/cluster/catalog"
)

func writeErr(w http.ResponseWriter, status int, code string) {
	var b ErrorBody
	b.Error.Code, b.Error.Message = code, code
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(b)
}

// TestClientRetries: a create answered 503 not_leader, then 503
// outcome_unknown, then 201 succeeds, carrying the same request ID every
// time; a 409 is not retried.
func TestClientRetries(t *testing.T) {
	var mu sync.Mutex
	var ids []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req CreateVolumeRequest
		json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		ids = append(ids, req.RequestID)
		n := len(ids)
		mu.Unlock()
		switch {
		case req.Name == "dup":
			writeErr(w, 409, CodeExists)
		case n == 1:
			writeErr(w, 503, CodeNotLeader)
		case n == 2:
			writeErr(w, 503, CodeUnknown)
		default:
			w.WriteHeader(201)
			json.NewEncoder(w).Encode(catalog.Volume{Name: req.Name})
		}
	}))
	defer srv.Close()
	c := NewClient(srv.URL, nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := c.CreateVolume(ctx, CreateVolumeRequest{Name: "v", Size: 4096})
	if err != nil || v.Name != "v" {
		t.Fatalf("%+v %v", v, err)
	}
	if len(ids) != 3 || ids[0] == "" || ids[0] != ids[1] || ids[1] != ids[2] {
		t.Fatalf("request ids %q: want three equal, non-empty", ids)
	}
	_, err = c.CreateVolume(ctx, CreateVolumeRequest{Name: "dup", Size: 4096})
	if !errors.Is(err, catalog.ErrExists) || len(ids) != 4 {
		t.Fatalf("409: %v after %d requests", err, len(ids))
	}
}

// TestClientFailover: with several addresses, a node that refuses
// connections is skipped; without any answer the error comes back when
// the context ends.
func TestClientFailover(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode([]catalog.Volume{{Name: "x"}})
	}))
	defer srv.Close()
	c := NewClient(deadAddr+", "+srv.URL, nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if vs, err := c.Volumes(ctx); err != nil || len(vs) != 1 {
		t.Fatalf("%v %v", vs, err)
	}
	only := NewClient(deadAddr, nil)
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if _, err := only.Volumes(short); err == nil {
		t.Fatal("no node answered, yet no error")
	}
}

// TestErrorSentinels: codes map to the sentinels errors.Is knows.
func TestErrorSentinels(t *testing.T) {
	for code, want := range map[string]error{
		CodeInvalid: catalog.ErrInvalid, CodeNotFound: catalog.ErrNotFound, CodeExists: catalog.ErrExists,
		CodeConflict: catalog.ErrConflict, CodeNotLeader: ErrNotLeader, CodeNoLeader: ErrNotLeader,
		CodeTimeout: ErrTimeout, CodeUnknown: ErrOutcomeUnknown, CodeUnauthenticated: ErrUnauthenticated,
		CodeForbidden: ErrForbidden,
	} {
		b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": "m"}})
		if err := DecodeError(400, b); !errors.Is(err, want) {
			t.Errorf("%s: %v does not match %v", code, err, want)
		}
	}
	if err := DecodeError(502, []byte("<html>bad gateway</html>")); err.Code != CodeInternal || err.Message != "<html>bad gateway</html>" {
		t.Errorf("non-JSON body: %+v", err)
	}
}

// TestClientRetryOwnEffect: after an unknown outcome, a delete that finds
// nothing and a host that is already there are the first attempt's
// effect, not errors; without an unknown outcome they stay errors.
func TestClientRetryOwnEffect(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.Method+r.URL.Path]++
		n := calls[r.Method+r.URL.Path]
		mu.Unlock()
		switch {
		case n == 1 && r.URL.Path != "/v1/volumes/plain":
			writeErr(w, 503, CodeUnknown)
		case r.Method == http.MethodDelete:
			writeErr(w, 404, CodeNotFound)
		default:
			writeErr(w, 409, CodeExists)
		}
	}))
	defer srv.Close()
	c := NewClient(srv.URL, nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.DeleteVolume(ctx, "v"); err != nil {
		t.Errorf("delete after unknown outcome: %v", err)
	}
	if err := c.AddHost(ctx, "nqn.2026-11.io.rdmablk:s", "nqn.2026-11.io.example:h"); err != nil {
		t.Errorf("add host after unknown outcome: %v", err)
	}
	if err := c.DeleteVolume(ctx, "plain"); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("plain delete of a missing volume: %v", err)
	}
}

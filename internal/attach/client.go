package attach

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// ErrNotFound: no attachment of that name is registered.
var ErrNotFound = errors.New("attach: no such attachment")

// Entry is one registered attachment as List sees it.
type Entry struct {
	Name   string
	PID    int
	Status *Status // nil when the control socket does not answer
	Err    error
}

func controlClient(sock string) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
}

func readState(path string) (state, error) {
	var st state
	b, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(b, &st)
}

// List returns the attachments registered in runDir with their status.
func List(runDir string) ([]Entry, error) {
	files, err := filepath.Glob(filepath.Join(runDir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Entry
	for _, f := range files {
		st, err := readState(f)
		if err != nil {
			continue
		}
		e := Entry{Name: st.Name, PID: st.PID}
		e.Status, e.Err = QueryStatus(st.Control)
		out = append(out, e)
	}
	return out, nil
}

// Running reports whether attachment name is registered in runDir by a
// live process (pid). A state file left by a dead process is not running:
// starting the attachment again recovers its ublk device.
func Running(runDir, name string) (pid int, ok bool) {
	st, err := readState(filepath.Join(runDir, name+".json"))
	if err != nil {
		return 0, false
	}
	return st.PID, pidAlive(st.PID)
}

// QueryStatus asks the attachment behind control socket sock.
func QueryStatus(sock string) (*Status, error) {
	resp, err := controlClient(sock).Get("http://attachment/status")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("attach: status: %s", resp.Status)
	}
	var st Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Disconnect asks attachment name in runDir to stop and waits up to
// timeout for it to unregister.
func Disconnect(runDir, name string, timeout time.Duration) error {
	path := filepath.Join(runDir, name+".json")
	st, err := readState(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s", ErrNotFound, name)
		}
		return err
	}
	resp, err := controlClient(st.Control).Post("http://attachment/disconnect", "", nil)
	if err != nil && !pidAlive(st.PID) {
		// The process died without Stop (kill -9): remove what it left,
		// the ublk device it served included.
		if err := removeStaleUblk(st); err != nil {
			return err
		}
		for _, p := range []string{path, st.Control, st.Socket} {
			_ = os.Remove(p)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("attach: %s does not answer on %s (stale? remove %s): %w", name, st.Control, path, err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(50 * time.Millisecond) // polling another process's state file
	}
	return fmt.Errorf("attach: %s did not stop within %v", name, timeout)
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs the rdmablk command line in-process against addr.
func runCLI(t *testing.T, addr string, args ...string) error {
	t.Helper()
	root := newRoot()
	root.SetArgs(append([]string{"-a", addr, "--provider", "soft",
		"--hostnqn", "nqn.2026-11.io.rdmablk:test-host", "--hostid", "01234567-89ab-4cde-8f01-23456789abcd"}, args...))
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	return root.Execute()
}

// TestWritePartialBlock: a write that ends inside a block keeps the rest
// of that block (read-modify-write), or zeroes it with --pad; a read or
// write past the end names the namespace size.
func TestWritePartialBlock(t *testing.T) {
	addr := startTarget(t, nil, "nqn.2026-11.io.rdmablk:rw") // 256 blocks of 512 bytes
	dir := t.TempDir()
	file := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	readBack := func(off, n string) []byte {
		t.Helper()
		out := filepath.Join(dir, "out")
		if err := runCLI(t, addr, "read", "--offset", off, "--length", n, "-o", out); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	old := bytes.Repeat([]byte{0xAA}, 1024)
	if err := runCLI(t, addr, "write", "--offset", "512", "-i", file("old", old)); err != nil {
		t.Fatal(err)
	}
	in := bytes.Repeat([]byte{0x55}, 600) // one block and 88 bytes of the next
	if err := runCLI(t, addr, "write", "--offset", "512", "-i", file("in", in)); err != nil {
		t.Fatal(err)
	}
	want := append(append([]byte{}, in...), old[600:]...)
	if got := readBack("512", "1024"); !bytes.Equal(got, want) {
		t.Fatalf("read-modify-write lost the block's old bytes: got %x…", got[590:610])
	}
	if err := runCLI(t, addr, "write", "--offset", "512", "--pad", "-i", file("in", in)); err != nil {
		t.Fatal(err)
	}
	want = append(append([]byte{}, in...), make([]byte, 424)...)
	if got := readBack("512", "1024"); !bytes.Equal(got, want) {
		t.Fatalf("--pad did not zero the rest of the block: got %x…", got[590:610])
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"read", "--offset", "128K", "--length", "512", "-o", filepath.Join(dir, "x")}, "past the end of namespace 1 (131072 bytes, 128.0 KiB)"},
		{[]string{"read", "--offset", "127K", "--length", "2K", "-o", filepath.Join(dir, "x")}, "runs past the end of namespace 1 (131072 bytes"},
		{[]string{"write", "--offset", "127K", "-i", file("big", make([]byte, 2048))}, "input does not fit: 2048 bytes at offset 130048, namespace 1 is 131072 bytes"},
	} {
		err := runCLI(t, addr, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// runCLIOut is runCLI returning what the command wrote to stdout.
func runCLIOut(t *testing.T, addr string, args ...string) string {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetArgs(append([]string{"-a", addr, "--provider", "soft",
		"--hostnqn", "nqn.2026-11.io.rdmablk:test-host", "--hostid", "01234567-89ab-4cde-8f01-23456789abcd"}, args...))
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	if err := root.Execute(); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return out.String()
}

package nvme

import (
	"strings"
	"testing"
)

func TestValidNQN(t *testing.T) {
	valid := []string{
		DiscoveryNQN,
		"nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6",
		"nqn.2014-08.org.nvmexpress:uuid:F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6",
		"nqn.2024-01.io.rdmablk:vol1",
		"nqn.2016-06.io.spdk:cnode1",
		"nqn.1999-12.com.example",
		"nqn.2024-01.io.rdmablk:" + strings.Repeat("v", MaxNQNLength-len("nqn.2024-01.io.rdmablk:")),
		"nqn.2024-01.com.example:t\u00e9st", // UTF-8 allowed
	}
	invalid := []string{
		"",
		"testnqn",
		"nqn.",
		"nqn.2014-08.",
		"nqn.2014-08.:x",
		"nqn.2014-08..x",
		"nqn.2014-13.com.example",
		"nqn.2014-00.com.example",
		"nqn.14-08.com.example",
		"nqn.2014/08.com.example",
		"NQN.2014-08.com.example",
		"nqn.2014-08.org.nvmexpress:uuid:",
		"nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf",
		"nqn.2014-08.org.nvmexpress:uuid:f81d4fae_7dec-11d0-a765-00a0c91e6bf6",
		"nqn.2014-08.org.nvmexpress:uuid:g81d4fae-7dec-11d0-a765-00a0c91e6bf6",
		"nqn.2024-01.io.rdmablk:" + strings.Repeat("v", MaxNQNLength-len("nqn.2024-01.io.rdmablk:")+1),
		"nqn.2024-01.io.rdmablk:a\x00b",
		"nqn.2024-01.io.rdmablk:a\nb",
		"nqn.2024-01.io.rdmablk:\xff",
	}
	for _, s := range valid {
		if !ValidNQN(s) {
			t.Errorf("ValidNQN(%q) = false", s)
		}
	}
	for _, s := range invalid {
		if ValidNQN(s) {
			t.Errorf("ValidNQN(%q) = true", s)
		}
	}
}

func TestHostNQNFromUUID(t *testing.T) {
	u := [16]byte{0xf8, 0x1d, 0x4f, 0xae, 0x7d, 0xec, 0x11, 0xd0, 0xa7, 0x65, 0x00, 0xa0, 0xc9, 0x1e, 0x6b, 0xf6}
	got := HostNQNFromUUID(u)
	const want = "nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6"
	if got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	if !ValidNQN(got) || !ValidNQN(HostNQNFromUUID([16]byte{})) {
		t.Fatal("generated NQN not valid")
	}
}

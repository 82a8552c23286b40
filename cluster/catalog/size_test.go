package catalog

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "512": 512, "4k": 4096, "1M": 1 << 20, "10G": 10 << 30, "10GiB": 10 << 30,
		"10GB": 10 << 30, "2T": 2 << 40, " 3 G ": 3 << 30,
	} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "G", "1X", "99999999999P", "1.5G"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}

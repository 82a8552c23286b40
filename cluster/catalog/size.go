package catalog

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize parses a byte size: a plain number of bytes or a number with
// a K, M, G, T or P suffix (powers of 1024; an optional trailing "iB" or
// "B" is accepted: 10G, 10GiB, 10GB all mean 10×2^30).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "iB"), "B")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		case 't', 'T':
			mult = 1 << 40
		case 'p', 'P':
			mult = 1 << 50
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	if v > (1<<63-1)/mult {
		return 0, fmt.Errorf("size %q overflows", s)
	}
	return v * mult, nil
}

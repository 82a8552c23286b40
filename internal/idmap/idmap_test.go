package idmap

import "testing"

func TestMap(t *testing.T) {
	var empty Map[uint32, *int]
	if empty.Get(1) != nil || empty.Len() != 0 {
		t.Fatal("zero Map not empty")
	}
	a, b := 1, 2
	one := New(map[uint32]*int{7: &a})
	if one.Get(7) != &a || one.Get(8) != nil || one.Get(0) != nil {
		t.Fatal("one entry: wrong lookups")
	}
	c := one.Clone()
	c[9] = &b
	two := New(c)
	if two.Get(7) != &a || two.Get(9) != &b || two.Get(8) != nil || two.Len() != 2 {
		t.Fatal("two entries: wrong lookups")
	}
	if one.Len() != 1 || one.Get(9) != nil {
		t.Fatal("Clone changed the original")
	}
	// a single entry under the zero key is still found (single, not oneKey != 0)
	z := New(map[uint32]*int{0: &b})
	if z.Get(0) != &b || z.Get(1) != nil {
		t.Fatal("zero key")
	}
}

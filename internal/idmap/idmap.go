package idmap

// Map is an immutable map from K to V. The zero value is an empty Map.
type Map[K comparable, V any] struct {
	m      map[K]V
	single bool // m has exactly one entry: oneKey → one
	oneKey K
	one    V
}

// New makes a Map of m, which the caller must not change afterwards.
func New[K comparable, V any](m map[K]V) *Map[K, V] {
	x := &Map[K, V]{m: m}
	if len(m) == 1 {
		for k, v := range m {
			x.single, x.oneKey, x.one = true, k, v
		}
	}
	return x
}

// Get is the value of k, or V's zero value.
func (x *Map[K, V]) Get(k K) V {
	if x.single && k == x.oneKey {
		return x.one
	}
	return x.m[k]
}

// Len is the number of entries.
func (x *Map[K, V]) Len() int { return len(x.m) }

// Clone is a copy of the entries, for the next Map of a copy on write.
func (x *Map[K, V]) Clone() map[K]V {
	c := make(map[K]V, len(x.m)+1)
	for k, v := range x.m {
		c[k] = v
	}
	return c
}

// All is the underlying map, for reading only.
func (x *Map[K, V]) All() map[K]V { return x.m }

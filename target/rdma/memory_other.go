//go:build !unix

package rdma

// allocRegion falls back to the Go heap where anonymous mappings are not
// available (only the soft provider works there).
func allocRegion(n int) ([]byte, error) { return make([]byte, n), nil }

func freeRegion(b []byte) error { return nil }

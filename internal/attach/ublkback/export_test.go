package ublkback

// SetRegionBytes lowers the MemRegion size for a test; the returned
// function restores it.
func SetRegionBytes(n int) func() {
	old := regionBytes
	regionBytes = n
	return func() { regionBytes = old }
}

package metrics

import "time"

// Record counts one operation that moved n bytes (0 on failure) and
// failed or not, and observes latency in the histogram when it is
// non-zero (the target core times a sample of its commands: see
// target.IOSample). It allocates nothing and reads no clock.
func (v *VolumeMeter) Record(op Op, n int, latency time.Duration, failed bool) {
	if latency > 0 {
		v.lat[op].Observe(latency.Seconds())
	}
	v.ops[op].Inc()
	if failed {
		v.errs[op].Inc()
		return
	}
	if n > 0 {
		v.bytes[op].Add(float64(n))
	}
}

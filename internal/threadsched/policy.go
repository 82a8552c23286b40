package threadsched

import "fmt"

// Policies Apply knows.
const (
	// Batch is SCHED_BATCH (the attachment's default).
	Batch = "batch"
	// Normal leaves the threads as they are (SCHED_OTHER, as started).
	Normal = "normal"
)

// Check reports whether policy is one Apply knows, as a one-line error
// that names the choices.
func Check(policy string) error {
	switch policy {
	case Batch, Normal:
		return nil
	}
	return fmt.Errorf("scheduling policy %q: want %s or %s", policy, Batch, Normal)
}

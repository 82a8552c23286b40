//go:build !linux

package threadsched

import "errors"

// Apply accepts only Normal outside Linux.
func Apply(policy string) error {
	if err := Check(policy); err != nil {
		return err
	}
	if policy != Normal {
		return errors.New("scheduling policy batch: Linux only")
	}
	return nil
}

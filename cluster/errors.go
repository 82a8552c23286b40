package cluster

import (
	"errors"
	"fmt"
)

var (
	// ErrNotLeader: a write or membership change reached a node that is
	// not the leader. Errors carrying it are *NotLeaderError.
	ErrNotLeader = errors.New("cluster: not the leader")
	// ErrClosed: the Node was closed.
	ErrClosed = errors.New("cluster: node closed")
	// ErrOutcomeUnknown: the command was handed to raft but leadership was
	// lost (or raft shut down) before it was known to be committed; it may
	// still commit under the next leader. Retry only idempotent writes.
	ErrOutcomeUnknown = errors.New("cluster: outcome unknown (leadership lost while committing)")
	// ErrTimeout: raft did not commit within the apply timeout.
	ErrTimeout = errors.New("cluster: timed out")
	// ErrBadConfig: a Config field is missing or malformed.
	ErrBadConfig = errors.New("cluster: invalid configuration")
)

// NotLeaderError says which node leads, when this node knows.
type NotLeaderError struct {
	LeaderID   string // raft server ID, "" when unknown
	LeaderAddr string // raft address, "" when unknown
}

func (e *NotLeaderError) Error() string {
	if e.LeaderID == "" {
		return "cluster: not the leader (no leader known)"
	}
	return fmt.Sprintf("cluster: not the leader (leader is %s at %s)", e.LeaderID, e.LeaderAddr)
}

// Unwrap makes errors.Is(err, ErrNotLeader) hold.
func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }

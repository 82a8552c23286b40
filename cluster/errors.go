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

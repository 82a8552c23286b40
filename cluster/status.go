package cluster

import (
	"time"

	"github.com/hashicorp/raft"
)

// Status is a node's view of the raft group.
type Status struct {
	ID           string    `json:"id"`
	State        string    `json:"state"` // Leader, Follower, Candidate, Shutdown
	Term         uint64    `json:"term"`
	LeaderID     string    `json:"leader_id"`
	LeaderAddr   string    `json:"leader_addr"`
	CommitIndex  uint64    `json:"commit_index"`
	AppliedIndex uint64    `json:"applied_index"`
	LastIndex    uint64    `json:"last_index"`
	LastContact  time.Time `json:"last_contact,omitzero"`
	Members      []Member  `json:"members"`
}

// Member is one server of the raft configuration.
type Member struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	Voter    bool   `json:"voter"`
}

// Status reports this node's raft state and the membership it knows.
func (n *Node) Status() Status {
	s := Status{
		ID:           n.cfg.ID,
		State:        n.raft.State().String(),
		Term:         n.raft.CurrentTerm(),
		CommitIndex:  n.raft.CommitIndex(),
		AppliedIndex: n.raft.AppliedIndex(),
		LastIndex:    n.raft.LastIndex(),
		LastContact:  n.raft.LastContact(),
	}
	s.LeaderID, s.LeaderAddr = n.Leader()
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, srv := range f.Configuration().Servers {
			s.Members = append(s.Members, Member{ID: string(srv.ID), RaftAddr: string(srv.Address), Voter: srv.Suffrage == raft.Voter})
		}
	}
	return s
}

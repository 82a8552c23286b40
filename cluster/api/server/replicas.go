package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// liveProbeTimeout bounds how long placement and failover wait for the
// nodes' health answers.
const liveProbeTimeout = time.Second

// Reach is what a node's health probe found.
type Reach uint8

const (
	// Unreachable: no answer in time — the node's host is down or cut
	// off, or the daemon hangs; the failover grace applies in full.
	Unreachable Reach = iota
	// Refused: the node's host refused the connection to its API, so it
	// is up and no rdmablkd listens there (killed, crashed, stopped).
	// Its volumes fail over after WatchOptions.RefusedGrace.
	Refused
	// Live: it answered as itself.
	Live
)

// probeNodes asks every node the catalogue knows for its health, in
// parallel (bounded by liveProbeTimeout), and returns what each probe
// found; this node is always Live. Options.Live replaces it. Called
// without the catalogue's lock held.
func (s *Server) probeNodes(ctx context.Context) map[string]Reach {
	var nodes []catalog.Node
	s.o.Node.View(func(st *catalog.State) { nodes = st.NodeList() })
	if s.o.Live != nil {
		return s.o.Live(ctx, nodes)
	}
	ctx, cancel := context.WithTimeout(ctx, liveProbeTimeout)
	defer cancel()
	reach := map[string]Reach{s.o.Node.ID(): Live}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range nodes {
		if n.ID == s.o.Node.ID() || n.APIAddr == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := Unreachable
			h, err := s.probe(ctx, n.APIAddr)
			switch {
			case err == nil && h.Node == n.ID:
				r = Live
			case errors.Is(err, syscall.ECONNREFUSED):
				r = Refused
			}
			mu.Lock()
			reach[n.ID] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	return reach
}

// liveNodes is probeNodes' Live nodes.
func (s *Server) liveNodes(ctx context.Context) map[string]bool {
	live := map[string]bool{}
	for id, r := range s.probeNodes(ctx) {
		if r == Live {
			live[id] = true
		}
	}
	return live
}

// placeReplicas fills req.ReplicaNodes for a replicated create that
// names none (catalog.PlaceReplicas over the nodes that answer now).
func (s *Server) placeReplicas(ctx context.Context, req *api.CreateVolumeRequest) error {
	if req.Replicas <= 1 || len(req.ReplicaNodes) > 0 {
		return nil
	}
	if req.Replicas > catalog.MaxReplicas {
		return fmt.Errorf("%w: %d replicas: want 1 to %d", catalog.ErrInvalid, req.Replicas, catalog.MaxReplicas)
	}
	live := s.liveNodes(ctx)
	var err error
	s.o.Node.View(func(st *catalog.State) {
		if old, ok := st.Volumes[req.Name]; ok {
			// A retry (or a taken name): the nodes the volume has, so that
			// Apply answers the first attempt's volume or "exists".
			for _, r := range old.ReplicaList() {
				if r.Node != req.Node {
					req.ReplicaNodes = append(req.ReplicaNodes, r.Node)
				}
			}
			if len(req.ReplicaNodes) != req.Replicas-1 {
				err = fmt.Errorf("%w: volume %q", catalog.ErrExists, req.Name)
			}
			return
		}
		req.ReplicaNodes, err = st.PlaceReplicas(req.Node, req.Replicas-1, req.Size, func(n string) bool { return live[n] })
	})
	return err
}

func (s *Server) volumeStatus(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var v catalog.Volume
	var ok bool
	s.o.Node.View(func(st *catalog.State) {
		v, ok = st.Volumes[name]
		v = v.Clone()
	})
	if !ok {
		writeError(w, fmt.Errorf("%w: volume %q", catalog.ErrNotFound, name))
		return
	}
	writeJSON(w, http.StatusOK, api.NewVolumeStatus(v))
}

func (s *Server) addReplica(w http.ResponseWriter, r *http.Request) {
	var req api.AddReplicaRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Node == "" {
		writeError(w, fmt.Errorf("%w: node is required (the node that gets the new copy)", catalog.ErrInvalid))
		return
	}
	name := r.PathValue("name")
	// The copy's file has the name the volume's files have everywhere,
	// derived from the volume's name (never from the client).
	c := catalog.Command{Op: catalog.OpAddReplica, Name: name, Replica: &catalog.Replica{Node: req.Node, Path: name + catalog.VolumeFileSuffix}}
	if res, ok := s.apply(w, r, c); ok {
		writeJSON(w, http.StatusOK, res.Volume)
	}
}

func (s *Server) removeReplica(w http.ResponseWriter, r *http.Request) {
	c := catalog.Command{Op: catalog.OpRemoveReplica, Name: r.PathValue("name"), NodeID: r.PathValue("node")}
	if res, ok := s.apply(w, r, c); ok {
		writeJSON(w, http.StatusOK, res.Volume)
	}
}

// failover moves a volume to the node the request names, or, when it
// names none, to the one catalog.PickNewOwner chooses among the
// reachable in-sync replicas (the command then carries the epoch the
// choice was made at, so a concurrent move makes it fail rather than
// move the volume twice). A planned move: the old owner's copy stays in
// sync.
func (s *Server) failover(w http.ResponseWriter, r *http.Request) {
	var req api.FailoverRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	name := r.PathValue("name")
	c := catalog.Command{Op: catalog.OpFailover, Name: name, NodeID: req.To, Message: "planned failover"}
	if c.NodeID == "" {
		live := s.liveNodes(r.Context())
		var v catalog.Volume
		var ok bool
		s.o.Node.View(func(st *catalog.State) { v, ok = st.Volumes[name]; v = v.Clone() })
		if !ok {
			writeError(w, fmt.Errorf("%w: volume %q", catalog.ErrNotFound, name))
			return
		}
		to, found := catalog.PickNewOwner(v, func(n string) bool { return live[n] })
		if !found {
			writeError(w, fmt.Errorf("%w: volume %q: no in-sync replica other than the owner %s is on a reachable node (replicas: %s)", catalog.ErrConflict, name, v.Node, replicaSummary(v)))
			return
		}
		c.NodeID, c.Epoch = to, v.OwnerEpoch()
	}
	if res, ok := s.apply(w, r, c); ok {
		writeJSON(w, http.StatusOK, res.Volume)
	}
}

func replicaSummary(v catalog.Volume) string {
	out := ""
	for i, r := range v.ReplicaList() {
		if i > 0 {
			out += ", "
		}
		out += r.Node + " " + r.State
	}
	return out
}

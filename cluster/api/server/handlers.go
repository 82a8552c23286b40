package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

func (s *Server) apply(w http.ResponseWriter, r *http.Request, c catalog.Command) (catalog.Result, bool) {
	c.V = c.Version()
	res, err := s.applyLocal(r.Context(), c)
	if err != nil {
		writeError(w, err)
		return res, false
	}
	return res, true
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	st := s.o.Node.Status()
	h := api.HealthResponse{Status: "ok", Node: st.ID, RaftState: st.State, Leader: st.LeaderID,
		Applied: st.AppliedIndex, LastContact: st.LastContact}
	code := http.StatusOK
	if st.LeaderID == "" {
		h.Status, code = api.CodeNoLeader, http.StatusServiceUnavailable
	}
	writeJSON(w, code, h)
}

// status answers this node's view of the group; every other member is
// asked for its own state and last contact through its API (in parallel,
// bounded by memberProbeTimeout), so one answer shows the whole cluster.
func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	st := s.o.Node.Status()
	resp := api.StatusResponse{
		ID: st.ID, State: st.State, Term: st.Term, LeaderID: st.LeaderID, LeaderAddr: st.LeaderAddr,
		CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex, LastIndex: st.LastIndex, LastContact: st.LastContact,
	}
	apiAddr := map[string]string{}
	s.o.Node.View(func(cs *catalog.State) {
		resp.Nodes = cs.NodeList()
		for _, n := range resp.Nodes {
			apiAddr[n.ID] = n.APIAddr
		}
	})
	resp.Members = make([]api.Member, len(st.Members))
	ctx, cancel := context.WithTimeout(r.Context(), memberProbeTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, m := range st.Members {
		resp.Members[i] = api.Member{ID: m.ID, RaftAddr: m.RaftAddr, Voter: m.Voter}
		if m.ID == st.ID {
			resp.Members[i].State, resp.Members[i].LastContact = st.State, st.LastContact
			continue
		}
		addr := apiAddr[m.ID]
		if addr == "" {
			resp.Members[i].State, resp.Members[i].Error = "unknown", "not registered in the catalogue"
			continue
		}
		wg.Add(1)
		go func(mm *api.Member) {
			defer wg.Done()
			h, err := s.probe(ctx, addr)
			if err != nil {
				mm.State, mm.Error = "unreachable", err.Error()
				return
			}
			mm.State, mm.LastContact = h.RaftState, h.LastContact
		}(&resp.Members[i])
	}
	wg.Wait()
	slices.SortFunc(resp.Members, func(a, b api.Member) int { return strings.Compare(a.ID, b.ID) })
	writeJSON(w, http.StatusOK, resp)
}

// memberProbeTimeout bounds how long status waits for other members.
const memberProbeTimeout = 2 * time.Second

// probe asks the member API at addr for its health (503 no_leader still
// carries the body).
func (s *Server) probe(ctx context.Context, addr string) (api.HealthResponse, error) {
	var h api.HealthResponse
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.scheme()+"://"+addr+"/v1/health", nil)
	if err != nil {
		return h, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return h, err
	}
	if err := json.Unmarshal(b, &h); err != nil || h.Node == "" {
		return h, api.DecodeError(resp.StatusCode, b)
	}
	return h, nil
}

func (s *Server) join(w http.ResponseWriter, r *http.Request) {
	var req api.JoinRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	n := req.Node
	if !catalog.ValidName(n.ID) || n.RaftAddr == "" || n.APIAddr == "" {
		writeError(w, fmt.Errorf("%w: join needs node id (%s), raft_addr and api_addr", catalog.ErrInvalid, catalog.NamePattern))
		return
	}
	if id := principal(r).NodeID; id != "" && id != n.ID {
		writeError(w, fmt.Errorf("%w: the certificate of node %s cannot join node %s", errForbidden, id, n.ID))
		return
	}
	if !s.isMember(n.ID, n.RaftAddr) {
		ctx, cancel := context.WithTimeout(r.Context(), joinCheckTimeout)
		err := s.o.VerifyJoin(ctx, n)
		cancel()
		if err != nil {
			writeError(w, fmt.Errorf("%w: node %s not added: %v", catalog.ErrConflict, n.ID, err))
			return
		}
	}
	if err := s.o.Node.AddVoter(n.ID, n.RaftAddr); err != nil {
		writeError(w, err)
		return
	}
	res, ok := s.apply(w, r, catalog.Command{Op: catalog.OpRegisterNode, Node: &n})
	if ok {
		writeJSON(w, http.StatusOK, res.Node)
	}
}

// joinCheckTimeout bounds the reachability check of a joining node.
const joinCheckTimeout = 5 * time.Second

// isMember reports whether id is already a member at raftAddr (a repeated
// join: nothing changes, no check needed).
func (s *Server) isMember(id, raftAddr string) bool {
	for _, m := range s.o.Node.Status().Members {
		if m.ID == id && m.RaftAddr == raftAddr {
			return true
		}
	}
	return false
}

// verifyJoin is the default join check: the node answers at its API
// address as the ID it claims, and its raft address accepts connections.
// A member that nobody serves would cost the cluster its quorum (a
// one-node cluster that adds an unreachable voter can never elect a
// leader again).
func (s *Server) verifyJoin(ctx context.Context, n catalog.Node) error {
	h, err := s.probe(ctx, n.APIAddr)
	if err != nil {
		return fmt.Errorf("its API at %s does not answer: %v", n.APIAddr, err)
	}
	if h.Node != n.ID {
		return fmt.Errorf("the API at %s is node %q, not %q", n.APIAddr, h.Node, n.ID)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", n.RaftAddr)
	if err != nil {
		return fmt.Errorf("its raft address %s does not accept connections: %v", n.RaftAddr, err)
	}
	c.Close()
	return nil
}

func (s *Server) remove(w http.ResponseWriter, r *http.Request) {
	var req api.RemoveRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.ID == s.o.Node.ID() {
		writeError(w, fmt.Errorf("%w: the leader cannot remove itself; transfer leadership or remove it from another node after it steps down", catalog.ErrConflict))
		return
	}
	if _, ok := s.apply(w, r, catalog.Command{Op: catalog.OpRemoveNode, NodeID: req.ID}); !ok {
		return
	}
	if err := s.o.Node.RemoveServer(req.ID); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"removed": req.ID})
}

func (s *Server) snapshot(w http.ResponseWriter, _ *http.Request) {
	if err := s.o.Node.Snapshot(); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"snapshot": "taken"})
}

// internalOps are the commands nodes propose through internal/apply:
// their own registration, their volumes' states, and (owners, fenced by
// their epoch) their replicas' states and a failover away from a failed
// copy. Everything else goes
// through the typed endpoints, where the leader builds the command (a
// client never supplies a path, UUID or NGUID).
var internalOps = map[catalog.Op]bool{
	catalog.OpRegisterNode:    true,
	catalog.OpSetVolumeState:  true,
	catalog.OpPurgeVolume:     true,
	catalog.OpSetReplicaState: true, // the owner, with its epoch
	catalog.OpReportRebuild:   true, // the owner, with its epoch
	catalog.OpReportResync:    true, // the owner, with its epoch
	catalog.OpFailover:        true, // an owner whose own copy failed, or the leader's failover watch
}

func (s *Server) internalApply(w http.ResponseWriter, r *http.Request) {
	var req api.ApplyRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	c := req.Command
	if !internalOps[c.Op] {
		writeError(w, fmt.Errorf("%w: internal/apply does not take %q commands", errForbidden, c.Op))
		return
	}
	if c.Op == catalog.OpFailover && c.Epoch == 0 {
		writeError(w, fmt.Errorf("%w: a node's failover must carry the ownership epoch it was decided at", catalog.ErrInvalid))
		return
	}
	if id := principal(r).NodeID; id != "" && c.Op == catalog.OpRegisterNode && (c.Node == nil || c.Node.ID != id) {
		writeError(w, fmt.Errorf("%w: node %s may register only itself", errForbidden, id))
		return
	}
	res, err := s.applyLocal(r.Context(), c)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// --- volumes ---

func (s *Server) listVolumes(w http.ResponseWriter, _ *http.Request) {
	var vs []catalog.Volume
	s.o.Node.View(func(st *catalog.State) { vs = st.VolumeList() })
	writeJSON(w, http.StatusOK, vs)
}

func (s *Server) getVolume(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var v catalog.Volume
	var ok bool
	s.o.Node.View(func(st *catalog.State) { v, ok = st.Volumes[name]; v = v.Clone() })
	if !ok {
		writeError(w, fmt.Errorf("%w: volume %q", catalog.ErrNotFound, name))
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// randomID returns a fresh UUID (version 4) as 32 hex digits.
func randomID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // UUID version 4, RFC 9562
	b[8] = b[8]&0x3f | 0x80
	return hex.EncodeToString(b[:])
}

func (s *Server) createVolume(w http.ResponseWriter, r *http.Request) {
	var req api.CreateVolumeRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Node == "" {
		req.Node = s.origin(r)
	}
	if err := s.placeReplicas(r.Context(), &req); err != nil {
		writeError(w, err)
		return
	}
	v, err := catalog.NewVolume(catalog.VolumeSpec{
		Name: req.Name, Size: req.Size, BlockSize: req.BlockSize, Node: req.Node, RequestID: req.RequestID,
		Replicas: req.Replicas, ReplicaNodes: req.ReplicaNodes,
	}, randomID(), randomID())
	if err != nil {
		writeError(w, err)
		return
	}
	if res, ok := s.apply(w, r, catalog.Command{Op: catalog.OpCreateVolume, Volume: &v}); ok {
		writeJSON(w, http.StatusCreated, res.Volume)
	}
}

func (s *Server) resizeVolume(w http.ResponseWriter, r *http.Request) {
	var req api.ResizeVolumeRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if res, ok := s.apply(w, r, catalog.Command{Op: catalog.OpResizeVolume, Name: r.PathValue("name"), Size: req.Size}); ok {
		writeJSON(w, http.StatusOK, res.Volume)
	}
}

// repairVolume clears a volume's error so that its owner retries it now.
func (s *Server) repairVolume(w http.ResponseWriter, r *http.Request) {
	if res, ok := s.apply(w, r, catalog.Command{Op: catalog.OpRepairVolume, Name: r.PathValue("name")}); ok {
		writeJSON(w, http.StatusOK, res.Volume)
	}
}

func (s *Server) deleteVolume(w http.ResponseWriter, r *http.Request) {
	if res, ok := s.apply(w, r, catalog.Command{Op: catalog.OpDeleteVolume, Name: r.PathValue("name")}); ok {
		writeJSON(w, http.StatusAccepted, res.Volume)
	}
}

// --- subsystems ---

func (s *Server) listSubsystems(w http.ResponseWriter, _ *http.Request) {
	var ss []catalog.Subsystem
	s.o.Node.View(func(st *catalog.State) { ss = st.SubsystemList() })
	writeJSON(w, http.StatusOK, ss)
}

func (s *Server) getSubsystem(w http.ResponseWriter, r *http.Request) {
	nqn := r.PathValue("nqn")
	var sub catalog.Subsystem
	var ok bool
	s.o.Node.View(func(st *catalog.State) {
		var x catalog.Subsystem
		if x, ok = st.Subsystems[nqn]; ok {
			sub = x.Clone()
		}
	})
	if !ok {
		writeError(w, fmt.Errorf("%w: subsystem %q", catalog.ErrNotFound, nqn))
		return
	}
	writeJSON(w, http.StatusOK, sub)
}

func (s *Server) createSubsystem(w http.ResponseWriter, r *http.Request) {
	var req api.CreateSubsystemRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Node == "" {
		req.Node = s.origin(r)
	}
	sub := &catalog.Subsystem{NQN: req.NQN, Node: req.Node, Serial: req.Serial, Model: req.Model,
		AllowAnyHost: req.AllowAnyHost, Hosts: req.Hosts, RequestID: req.RequestID}
	if res, ok := s.apply(w, r, catalog.Command{Op: catalog.OpCreateSubsystem, Subsystem: sub}); ok {
		writeJSON(w, http.StatusCreated, res.Subsystem)
	}
}

func (s *Server) deleteSubsystem(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.apply(w, r, catalog.Command{Op: catalog.OpDeleteSubsystem, NQN: r.PathValue("nqn")}); ok {
		writeJSON(w, http.StatusOK, map[string]string{"deleted": r.PathValue("nqn")})
	}
}

func (s *Server) addNamespace(w http.ResponseWriter, r *http.Request) {
	var req api.AddNamespaceRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	res, ok := s.apply(w, r, catalog.Command{Op: catalog.OpAddNamespace, NQN: r.PathValue("nqn"), NSID: req.NSID, Name: req.Volume})
	if ok {
		writeJSON(w, http.StatusCreated, api.AddNamespaceResponse{NSID: res.NSID, Subsystem: *res.Subsystem})
	}
}

func (s *Server) removeNamespace(w http.ResponseWriter, r *http.Request) {
	nsid, err := strconv.ParseUint(r.PathValue("nsid"), 10, 32)
	if err != nil {
		writeError(w, fmt.Errorf("%w: nsid %q", catalog.ErrInvalid, r.PathValue("nsid")))
		return
	}
	if res, ok := s.apply(w, r, catalog.Command{Op: catalog.OpRemoveNamespace, NQN: r.PathValue("nqn"), NSID: uint32(nsid)}); ok {
		writeJSON(w, http.StatusOK, res.Subsystem)
	}
}

func (s *Server) addHost(w http.ResponseWriter, r *http.Request) {
	var req api.HostRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if res, ok := s.apply(w, r, catalog.Command{Op: catalog.OpAddHost, NQN: r.PathValue("nqn"), Host: req.Host}); ok {
		writeJSON(w, http.StatusOK, res.Subsystem)
	}
}

func (s *Server) removeHost(w http.ResponseWriter, r *http.Request) {
	if res, ok := s.apply(w, r, catalog.Command{Op: catalog.OpRemoveHost, NQN: r.PathValue("nqn"), Host: r.PathValue("host")}); ok {
		writeJSON(w, http.StatusOK, res.Subsystem)
	}
}

func (s *Server) setAllowAny(w http.ResponseWriter, r *http.Request) {
	var req api.AllowAnyRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if res, ok := s.apply(w, r, catalog.Command{Op: catalog.OpSetAllowAnyHost, NQN: r.PathValue("nqn"), Allow: req.Allow}); ok {
		writeJSON(w, http.StatusOK, res.Subsystem)
	}
}

func (s *Server) setANA(w http.ResponseWriter, r *http.Request) {
	var req api.ANARequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if res, ok := s.apply(w, r, catalog.Command{Op: catalog.OpSetANAState, NQN: r.PathValue("nqn"), NodeID: req.Node, State: req.State}); ok {
		writeJSON(w, http.StatusOK, res.Subsystem)
	}
}

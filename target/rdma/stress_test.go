package rdma

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// TestConcurrentQueues runs several hosts with several I/O queues each,
// every queue with many commands outstanding, a core completing
// asynchronously, on both device profiles, and checks every byte.
func TestConcurrentQueues(t *testing.T) {
	forProfiles(t, func(t *testing.T, prof soft.Profile) {
		g := newRig(t, rigOpts{profile: prof, cfg: Config{MaxDataTransfer: 64 << 10}})
		g.core.async.Store(true)
		const (
			queues = 4
			depth  = 16
			chunk  = 32 << 10
			rounds = 4
		)
		hosts := make([]*rawHost, queues)
		for i := range hosts {
			hosts[i] = g.connectQueue(rawOpts{qid: uint16(1 + i%2), depth: depth, dataSize: 2 * depth * chunk}, testSubNQN, testHostNQN)
		}
		var wg sync.WaitGroup
		errs := make(chan error, queues)
		for qi, h := range hosts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- runQueueRounds(g, h, qi, depth, chunk, rounds)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		st := g.l.Stats()
		if want := uint64(queues * depth * rounds); st.RDMAReads != want || st.RDMAWrites != want || st.QueueErrors != 0 {
			t.Fatalf("stats %+v, want %d reads and writes", st, want)
		}
	})
}

// runQueueRounds writes depth chunks at once into the queue's own disk
// region, reads them back at once into another buffer, and compares.
func runQueueRounds(g *rig, h *rawHost, qi, depth, chunk, rounds int) error {
	base := uint64(qi * depth * chunk)
	for round := range rounds {
		src := h.data()[:depth*chunk]
		fill(src, uint64(qi*100+round))
		for i := range depth {
			s := h.ioSQE(nvme.IOWrite, uint16(i), base+uint64(i*chunk), uint32(chunk), i*chunk, 0)
			if err := h.send(capsule(&s, nil)); err != nil {
				return err
			}
		}
		if err := collect(g, h, depth); err != nil {
			return fmt.Errorf("queue %d round %d writes: %w", qi, round, err)
		}
		dst := h.data()[depth*chunk : 2*depth*chunk]
		clear(dst)
		for i := range depth {
			s := h.ioSQE(nvme.IORead, uint16(100+i), base+uint64(i*chunk), uint32(chunk), depth*chunk+i*chunk, 0)
			if err := h.send(capsule(&s, nil)); err != nil {
				return err
			}
		}
		if err := collect(g, h, depth); err != nil {
			return fmt.Errorf("queue %d round %d reads: %w", qi, round, err)
		}
		if !bytes.Equal(src, dst) {
			return fmt.Errorf("queue %d round %d: data differs", qi, round)
		}
	}
	return nil
}

func collect(g *rig, h *rawHost, n int) error {
	seen := map[uint16]bool{}
	for range n {
		rsp, err := h.response(g.ctx)
		if err != nil {
			return err
		}
		if !rsp.cqe.Status().OK() || seen[rsp.cqe.CID()] {
			return fmt.Errorf("cid %d status %v dup %v", rsp.cqe.CID(), rsp.cqe.Status(), seen[rsp.cqe.CID()])
		}
		seen[rsp.cqe.CID()] = true
	}
	return nil
}

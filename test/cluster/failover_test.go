package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// TestLeaderStopDuringCreates: 200 creates from four clients, each given
// every node's API address; the leader is stopped a quarter of the way in.
// Every create is acknowledged (the client retries through the election,
// and a create retried after an unknown outcome answers its own volume
// rather than "exists"), and every acknowledged volume is present on every
// node afterwards, including the old leader once restarted.
func TestLeaderStopDuringCreates(t *testing.T) {
	ms := startCluster(t, 3)
	var addrs []string
	for _, m := range ms {
		addrs = append(addrs, m.a.APIAddr())
	}
	const total, workers = 200, 4
	var (
		mu    sync.Mutex
		acked []string
		errs  []error
	)
	stopAt := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := api.NewClient(strings.Join(addrs, ","), nil)
			defer c.Close()
			for i := w; i < total; i += workers {
				name := fmt.Sprintf("f-%03d", i)
				cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				v, err := c.CreateVolume(cctx, api.CreateVolumeRequest{Name: name, Size: 1 << 20, Node: ms[i%3].id})
				cancel()
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("create %s: %w", name, err))
				} else if v.Name != name {
					errs = append(errs, fmt.Errorf("create %s answered %+v", name, v))
				} else {
					acked = append(acked, name)
				}
				n := len(acked)
				mu.Unlock()
				if n == total/4 {
					once.Do(func() { close(stopAt) })
				}
			}
		}()
	}
	<-stopAt
	old := leaderOf(t, ms)
	old.stop(t)
	t.Logf("stopped leader %s after %d acknowledged creates", old.id, total/4)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if len(acked) != total {
		t.Fatalf("%d of %d creates acknowledged", len(acked), total)
	}
	slices.Sort(acked)

	restarted := startMember(t, old.id, old.dir, old.raftAddr, false, nil)
	*old = *restarted
	eventually(t, 60*time.Second, "every acknowledged create on every node", func() bool {
		for _, m := range ms {
			var names []string
			m.a.Node.View(func(st *catalog.State) {
				for _, v := range st.VolumeList() {
					names = append(names, v.Name)
				}
			})
			for _, n := range acked {
				if _, found := slices.BinarySearch(names, n); !found {
					return false
				}
			}
			if len(names) != total {
				t.Fatalf("%s has %d volumes, want %d: %v", m.id, len(names), total, names)
			}
		}
		return true
	})
}

// TestLeaderPartitionDuringCreates: like TestLeaderStopDuringCreates, but
// the leader is cut off from raft while its API keeps answering, so that
// clients talking to it meet an unknown outcome or no leader and must
// move on. Every create is acknowledged, and after the partition heals
// every acknowledged volume is on every node.
func TestLeaderPartitionDuringCreates(t *testing.T) {
	ms := startCluster(t, 3)
	var addrs []string
	for _, m := range ms {
		addrs = append(addrs, m.a.APIAddr())
	}
	const total, workers = 60, 3
	var (
		mu    sync.Mutex
		acked []string
		errs  []error
	)
	cutAt := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each worker starts at a different node, so one of them
			// talks to the leader that is cut off.
			rot := append(append([]string{}, addrs[w:]...), addrs[:w]...)
			c := api.NewClient(strings.Join(rot, ","), nil)
			defer c.Close()
			for i := w; i < total; i += workers {
				name := fmt.Sprintf("q-%03d", i)
				cctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
				_, err := c.CreateVolume(cctx, api.CreateVolumeRequest{Name: name, Size: 1 << 20, Node: ms[i%3].id})
				cancel()
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("create %s: %w", name, err))
				} else {
					acked = append(acked, name)
				}
				n := len(acked)
				mu.Unlock()
				if n == total/4 {
					once.Do(func() { close(cutAt) })
				}
			}
		}()
	}
	<-cutAt
	cut := leaderOf(t, ms)
	cut.layer.setCut(true)
	t.Logf("cut leader %s off after %d acknowledged creates", cut.id, total/4)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if len(acked) != total {
		t.Fatalf("%d of %d creates acknowledged", len(acked), total)
	}
	cut.layer.setCut(false)
	slices.Sort(acked)
	eventually(t, 60*time.Second, "every acknowledged create on every node", sameVolumes(t, ms, acked))
}

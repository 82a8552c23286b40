package freelist

import (
	"sync"
	"testing"
)

func TestTryGetPut(t *testing.T) {
	l := New([]int{1, 2})
	a, ok1 := l.TryGet()
	b, ok2 := l.TryGet()
	if !ok1 || !ok2 || a+b != 3 {
		t.Fatalf("took %d %v, %d %v; want 1 and 2", a, ok1, b, ok2)
	}
	if v, ok := l.TryGet(); ok {
		t.Fatalf("TryGet on an empty list gave %d", v)
	}
	l.Put(a)
	if v, ok := l.TryGet(); !ok || v != a {
		t.Fatalf("TryGet after Put(%d) = %d %v", a, v, ok)
	}
}

// A Put goes to the waiter that came first, not to the free items where a
// TryGet could take it.
func TestPutHandsToWaitersInOrder(t *testing.T) {
	l := New([]int{})
	got := make(chan [2]int, 2)
	started := make(chan struct{})
	for i := range 2 {
		go func() {
			if i == 1 {
				<-started
			}
			v, ok := l.Get()
			if !ok {
				v = -1
			}
			got <- [2]int{i, v}
		}()
		waitWaiters(t, l, i+1)
		if i == 0 {
			close(started)
		}
	}
	l.Put(10)
	if g := <-got; g != [2]int{0, 10} {
		t.Fatalf("first Put went to waiter %d (%d), want waiter 0", g[0], g[1])
	}
	if v, ok := l.TryGet(); ok {
		t.Fatalf("TryGet took %d while a Get waited", v)
	}
	l.Put(20)
	if g := <-got; g != [2]int{1, 20} {
		t.Fatalf("second Put: %v, want waiter 1 with 20", g)
	}
}

// Close fails waiting and later Gets; a Take keeps waiting and gets the
// next Put.
func TestCloseFailsGetNotTake(t *testing.T) {
	l := New([]int{})
	getDone := make(chan bool)
	takeDone := make(chan int)
	go func() { _, ok := l.Get(); getDone <- ok }()
	waitWaiters(t, l, 1)
	go func() { takeDone <- l.Take() }()
	waitWaiters(t, l, 2)
	l.Close()
	if ok := <-getDone; ok {
		t.Fatal("a waiting Get succeeded after Close")
	}
	if _, ok := l.Get(); ok {
		t.Fatal("Get after Close succeeded")
	}
	l.Close() // idempotent
	l.Put(7)
	if v := <-takeDone; v != 7 {
		t.Fatalf("Take got %d, want 7", v)
	}
	l.Put(8)
	if v, ok := l.TryGet(); !ok || v != 8 {
		t.Fatalf("TryGet after Close = %d %v, want 8", v, ok)
	}
}

// Many goroutines take and give back; every item is accounted for and none
// is held twice (-race).
func TestConcurrentNoDuplicate(t *testing.T) {
	const n, workers, rounds = 8, 6, 2000
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	l := New(items)
	var held [n]sync.Mutex // TryLock fails if an item is handed out twice
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				var v int
				if (w+r)%2 == 0 {
					var ok bool
					if v, ok = l.TryGet(); !ok {
						continue
					}
				} else {
					v = l.Take()
				}
				if !held[v].TryLock() {
					t.Errorf("item %d handed out twice", v)
					return
				}
				held[v].Unlock()
				l.Put(v)
			}
		}()
	}
	wg.Wait()
	seen := map[int]bool{}
	for range n {
		v, ok := l.TryGet()
		if !ok || seen[v] {
			t.Fatalf("after the run: item %d %v (seen %v)", v, ok, seen)
		}
		seen[v] = true
	}
}

func TestTryGetPutAllocatesNothing(t *testing.T) {
	l := New([]*int{new(int)})
	if a := testing.AllocsPerRun(100, func() {
		v, _ := l.TryGet()
		l.Put(v)
	}); a != 0 {
		t.Fatalf("TryGet+Put allocates %v", a)
	}
}

// waitWaiters waits until n Get/Take calls wait on l.
func waitWaiters[T any](t *testing.T, l *List[T], n int) {
	t.Helper()
	for {
		l.mu.Lock()
		k := len(l.waiters)
		l.mu.Unlock()
		if k >= n {
			return
		}
		runtimeGosched()
	}
}

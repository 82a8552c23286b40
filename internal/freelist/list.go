package freelist

import "sync"

// List is a pool of items of type T. Make it with New.
type List[T any] struct {
	mu      sync.Mutex
	items   []T          // free items, taken last in first out
	waiters []*waiter[T] // Get and Take calls waiting, in arrival order
	closed  bool
}

// waiter is one waiting Get or Take: Put sends it an item; Close closes
// ch of a Get (take false).
type waiter[T any] struct {
	ch   chan T
	take bool
}

// New returns a list holding items (all free), with room for all of them.
func New[T any](items []T) *List[T] {
	l := &List[T]{items: make([]T, len(items))}
	copy(l.items, items)
	return l
}

// TryGet takes a free item without waiting; false when none is free.
func (l *List[T]) TryGet() (T, bool) {
	l.mu.Lock()
	v, ok := l.pop()
	l.mu.Unlock()
	return v, ok
}

// pop takes the last free item; mu held.
func (l *List[T]) pop() (T, bool) {
	var zero T
	n := len(l.items)
	if n == 0 {
		return zero, false
	}
	v := l.items[n-1]
	l.items[n-1] = zero
	l.items = l.items[:n-1]
	return v, true
}

// Get takes a free item, waiting for one; false once the list is closed
// (also when Close comes while it waits).
func (l *List[T]) Get() (T, bool) { return l.wait(false) }

// Take takes a free item, waiting for one, closed or not.
func (l *List[T]) Take() T {
	v, _ := l.wait(true)
	return v
}

func (l *List[T]) wait(take bool) (T, bool) {
	l.mu.Lock()
	if v, ok := l.pop(); ok || l.closed && !take {
		l.mu.Unlock()
		return v, ok
	}
	w := &waiter[T]{ch: make(chan T, 1), take: take}
	l.waiters = append(l.waiters, w)
	l.mu.Unlock()
	v, ok := <-w.ch
	return v, ok
}

// Put gives v back: to the longest waiting Get or Take, else to the free
// items. Never blocks.
func (l *List[T]) Put(v T) {
	l.mu.Lock()
	if len(l.waiters) > 0 {
		w := l.waiters[0]
		copy(l.waiters, l.waiters[1:])
		l.waiters[len(l.waiters)-1] = nil
		l.waiters = l.waiters[:len(l.waiters)-1]
		l.mu.Unlock()
		w.ch <- v // room for one, and only this Put sends to w
		return
	}
	l.items = append(l.items, v)
	l.mu.Unlock()
}

// Close makes waiting and later Gets return false. Idempotent.
func (l *List[T]) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	kept := l.waiters[:0]
	for _, w := range l.waiters {
		if w.take {
			kept = append(kept, w)
		} else {
			close(w.ch)
		}
	}
	clear(l.waiters[len(kept):])
	l.waiters = kept
}

package target

import "sync"

// workerPool runs commands on backends that may block: a fixed number of
// goroutines reading one buffered channel of requests. gate counts
// submitted requests so that stop can wait for them before closing the
// channel (no send on a closed channel, no request left behind).
type workerPool struct {
	ch   chan *Request
	gate gate
	wg   sync.WaitGroup
}

// workQueueLen is the channel buffer per worker: Execute blocks only when
// this many commands per worker are already waiting.
const workQueueLen = 16

func newWorkerPool(n int) *workerPool {
	p := &workerPool{ch: make(chan *Request, n*workQueueLen)}
	p.gate.init()
	p.wg.Add(n)
	for range n {
		go p.worker()
	}
	return p
}

// worker executes requests and completes them through their queue's
// QueueConn.Complete.
func (p *workerPool) worker() {
	defer p.wg.Done()
	for r := range p.ch {
		r.core.state = stateWorking
		q := r.core.q
		st := run(r)
		q.completeAsync(r, st)
		p.gate.leave()
	}
}

// stop waits for every submitted request to complete, then stops the
// workers. Submissions after stop began complete inline with an error.
func (p *workerPool) stop() {
	<-p.gate.close()
	close(p.ch)
	p.wg.Wait()
}

package spin

// Outcome is what happened to a poller since its budget last changed.
type Outcome int

const (
	// Found: an empty poll was followed by work while spinning.
	Found Outcome = iota
	// Slept: the budget ran out; the poller arms the CQ and sleeps.
	Slept
	// Woke: the poller woke from its sleep.
	Woke
)

// Next adapts how many empty polls a poller spins (yielding the
// processor) before it sleeps, between 0 and limit: spinning that found
// work doubles the budget, running out of it halves it, and each wake-up
// adds one. A queue whose work comes in bursts keeps spinning through the
// gaps; an idle or sparsely used queue — and so an oversubscribed host
// with many of them, or a one-CPU guest where the completion can only
// come once the poller stops holding the CPU — quickly stops spinning and
// sleeps on its channels instead of taking the CPU its peers (and the
// NIC's own work) need. A limit ≤ 0 means never spin.
func Next(budget, limit int, o Outcome) int {
	switch o {
	case Found:
		budget = 2*budget + 1
	case Slept:
		budget /= 2
	case Woke:
		budget++
	}
	return min(max(budget, 0), max(limit, 0))
}

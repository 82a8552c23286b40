package cpuprof

// Paths are a process's profiling flags; an empty path records nothing.
type Paths struct {
	CPU   string // --cpuprofile
	Mem   string // --memprofile
	Trace string // --trace
}

// Start starts every recording p names and returns the function that
// stops them all and writes their files; when one cannot start, those
// already started are stopped and its error is returned.
func (p Paths) Start() (stop func(), err error) {
	var stops []func()
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	for _, s := range []struct {
		start func(string) (func(), error)
		path  string
	}{{Start, p.CPU}, {Mem, p.Mem}, {Trace, p.Trace}} {
		st, err := s.start(s.path)
		if err != nil {
			stopAll()
			return nil, err
		}
		stops = append(stops, st)
	}
	return stopAll, nil
}

package netns

import (
	"context"

	"github.com/rdmablk/rdmablk/verbs"
)

// Provider returns p with every call that creates an RDMA resource —
// Devices, Listen, Resolve, and on the devices and IDs it returns AllocPD,
// CreateCQ and CreateQP — made inside the network namespace name (see Do).
// Everything else is delegated unchanged; the PDs, CQs, QPs and listeners
// returned are p's own objects. An empty name returns p itself, and so
// does a p already wrapped for name.
func Provider(p verbs.Provider, name string) verbs.Provider {
	if name == "" {
		return p
	}
	if w, ok := p.(*provider); ok && w.ns == name {
		return p // already wrapped
	}
	return &provider{Provider: p, ns: name}
}

type provider struct {
	verbs.Provider
	ns string
}

func (p *provider) Devices() ([]verbs.Device, error) {
	var devs []verbs.Device
	err := Do(p.ns, func() error {
		var err error
		devs, err = p.Provider.Devices()
		return err
	})
	for i, d := range devs {
		devs[i] = &device{Device: d, ns: p.ns}
	}
	return devs, err
}

func (p *provider) Listen(addr string, opts verbs.ListenOptions) (verbs.Listener, error) {
	var ln verbs.Listener
	err := Do(p.ns, func() error {
		var err error
		ln, err = p.Provider.Listen(addr, opts)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &listener{Listener: ln, ns: p.ns}, nil
}

func (p *provider) Resolve(ctx context.Context, addr string, opts verbs.ResolveOptions) (verbs.ConnID, error) {
	var id verbs.ConnID
	err := Do(p.ns, func() error {
		var err error
		id, err = p.Provider.Resolve(ctx, addr, opts)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &connID{ConnID: id, ns: p.ns}, nil
}

// listener wraps the IDs of incoming requests so their QPs are created in
// the namespace too.
type listener struct {
	verbs.Listener
	ns string
}

func (l *listener) Accept(ctx context.Context) (*verbs.ConnRequest, error) {
	req, err := l.Listener.Accept(ctx)
	if err != nil {
		return nil, err
	}
	r := *req
	r.ID = &connID{ConnID: req.ID, ns: l.ns}
	return &r, nil
}

type connID struct {
	verbs.ConnID
	ns string
}

func (c *connID) Device() verbs.Device {
	d := c.ConnID.Device()
	if d == nil {
		return nil
	}
	return &device{Device: d, ns: c.ns}
}

func (c *connID) CreateQP(pd verbs.ProtectionDomain, attr verbs.QPInitAttr) (verbs.QueuePair, error) {
	var qp verbs.QueuePair
	err := Do(c.ns, func() error {
		var err error
		qp, err = c.ConnID.CreateQP(pd, attr)
		return err
	})
	return qp, err
}

type device struct {
	verbs.Device
	ns string
}

func (d *device) AllocPD() (verbs.ProtectionDomain, error) {
	var pd verbs.ProtectionDomain
	err := Do(d.ns, func() error {
		var err error
		pd, err = d.Device.AllocPD()
		return err
	})
	return pd, err
}

func (d *device) CreateCQ(cqe, vector int) (verbs.CompletionQueue, error) {
	var cq verbs.CompletionQueue
	err := Do(d.ns, func() error {
		var err error
		cq, err = d.Device.CreateCQ(cqe, vector)
		return err
	})
	return cq, err
}

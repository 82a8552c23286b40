package target

import (
	"time"

	"github.com/rdmablk/rdmablk/nvme"
)

// featureValues are the features that are only stored and returned (the
// Linux host and nvme-cli query some of them); guarded by Controller.mu.
type featureValues struct {
	arbitration    uint32
	powerMgmt      uint32
	tempThresh     uint32
	errRecovery    uint32
	irqCoalesce    uint32
	writeAtomicity uint32
}

// defaultFeatures are the values after controller creation: everything 0
// but the over-temperature threshold, 343 K (70 °C).
func defaultFeatures() featureValues { return featureValues{tempThresh: 343} }

// featCapChangeable is the Get Features SEL=3 capability "changeable".
const featCapChangeable = 1 << 2

// aecSupported is the AEC mask the controller honours.
func (c *Controller) aecSupported() uint32 {
	if c.discovery {
		return nvme.AECDiscoveryChange
	}
	return nvme.AECNSAttr | nvme.AECANAChange
}

// discoveryFeature reports the features a discovery controller supports.
func discoveryFeature(fid uint8) bool {
	return fid == nvme.FeatKeepAliveTimer || fid == nvme.FeatAsyncEventConfig
}

// setFeatures handles Set Features.
func (c *Controller) setFeatures(r *Request) nvme.Status {
	f := nvme.FeaturesCmd{SQE: &r.SQE}
	if f.SV() {
		return nvme.StatusFeatureNotSaveable.WithDNR()
	}
	fid, v := f.FID(), r.SQE.CDW11()
	if c.discovery && !discoveryFeature(fid) {
		return nvme.StatusInvalidField.WithDNR()
	}
	switch fid {
	case nvme.FeatKeepAliveTimer:
		c.setKATO(v)
		return nvme.StatusSuccess
	case nvme.FeatHostID:
		// The host ID comes with Connect; it cannot change over fabrics.
		return nvme.StatusCommandSequenceError.WithDNR()
	case nvme.FeatVolatileWriteCache:
		if v&nvme.FeatVWCWCE == 0 {
			// The backends' caches cannot be switched off.
			return nvme.StatusFeatureNotChangeable.WithDNR()
		}
		return nvme.StatusSuccess
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch fid {
	case nvme.FeatNumQueues:
		if uint16(v) == 0xFFFF || uint16(v>>16) == 0xFFFF {
			return nvme.StatusInvalidField.WithDNR()
		}
		nsqr, ncqr := nvme.ParseNumQueues(v)
		// Fabrics queues are SQ/CQ pairs: grant the smaller request,
		// capped by MaxIOQueues (and never below one).
		g := max(min(nsqr, ncqr, c.maxIOQ), 1)
		c.ioQueues = g
		r.CQE.SetDW0(nvme.NumQueuesValue(g, g))
	case nvme.FeatAsyncEventConfig:
		c.aec = v & c.aecSupported()
	case nvme.FeatArbitration:
		c.feat.arbitration = v
	case nvme.FeatPowerMgmt:
		if v&0x1F != 0 { // only power state 0 exists (NPSS 0)
			return nvme.StatusInvalidField.WithDNR()
		}
		c.feat.powerMgmt = v
	case nvme.FeatTempThreshold:
		c.feat.tempThresh = v & 0xFFFF
	case nvme.FeatErrorRecovery:
		c.feat.errRecovery = v
	case nvme.FeatIRQCoalesce:
		c.feat.irqCoalesce = v
	case nvme.FeatWriteAtomicity:
		c.feat.writeAtomicity = v & 1
	default:
		return nvme.StatusInvalidField.WithDNR()
	}
	return nvme.StatusSuccess
}

// getFeatures handles Get Features (SEL current, default, saved —
// features are not saveable, so saved reads as current — and supported
// capabilities).
func (c *Controller) getFeatures(r *Request) nvme.Status {
	f := nvme.FeaturesCmd{SQE: &r.SQE}
	fid, sel := f.FID(), f.SEL()
	if c.discovery && !discoveryFeature(fid) {
		return nvme.StatusInvalidField.WithDNR()
	}
	if sel > nvme.FeatSelSupported {
		return nvme.StatusInvalidField.WithDNR()
	}
	if fid == nvme.FeatHostID {
		if r.SQE.CDW11()&nvme.FeatHostIDEX == 0 {
			return nvme.StatusInvalidField.WithDNR() // only the 128-bit form
		}
		if sel == nvme.FeatSelSupported {
			return nvme.StatusSuccess
		}
		b, st := dataIn(r, 16)
		if st != nvme.StatusSuccess {
			return st
		}
		copy(b, c.hostID[:])
		return nvme.StatusSuccess
	}
	def := defaultFeatures()
	c.mu.Lock()
	cur := c.feat
	ioq, aec, kato := c.ioQueues, c.aec, c.kato
	c.mu.Unlock()
	if sel == nvme.FeatSelDefault {
		cur, ioq, aec, kato = def, c.maxIOQ, 0, c.t.opts.kato(0, c.discovery)
	}
	var v uint32
	changeable := true
	switch fid {
	case nvme.FeatNumQueues:
		v = nvme.NumQueuesValue(ioq, ioq)
	case nvme.FeatAsyncEventConfig:
		v = aec
	case nvme.FeatKeepAliveTimer:
		v = uint32(kato / time.Millisecond)
	case nvme.FeatVolatileWriteCache:
		v = nvme.FeatVWCWCE
		changeable = false
	case nvme.FeatArbitration:
		v = cur.arbitration
	case nvme.FeatPowerMgmt:
		v = cur.powerMgmt
	case nvme.FeatTempThreshold:
		v = cur.tempThresh
	case nvme.FeatErrorRecovery:
		v = cur.errRecovery
	case nvme.FeatIRQCoalesce:
		v = cur.irqCoalesce
	case nvme.FeatWriteAtomicity:
		v = cur.writeAtomicity
	default:
		return nvme.StatusInvalidField.WithDNR()
	}
	if sel == nvme.FeatSelSupported {
		v = 0
		if changeable {
			v = featCapChangeable
		}
	}
	r.CQE.SetDW0(v)
	return nvme.StatusSuccess
}

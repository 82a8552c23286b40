package target

import (
	"slices"

	"github.com/rdmablk/rdmablk/nvme"
)

// getLogPage handles Get Log Page: the log is built whole, then the window
// [LPO, LPO+NUMD×4) is copied out, zero-filled past the log's end. The LPO
// must be dword aligned and inside the log (else Invalid Field).
func (c *Controller) getLogPage(r *Request) nvme.Status {
	cmd := nvme.GetLogPageCmd{SQE: &r.SQE}
	b, st := dataIn(r, cmd.NumBytes())
	if st != nvme.StatusSuccess {
		return st
	}
	off := cmd.Offset()
	if off%4 != 0 {
		return nvme.StatusInvalidField.WithDNR()
	}
	lid := cmd.LID()
	if c.discovery {
		if lid != nvme.LogDiscovery {
			return nvme.StatusInvalidLogPage.WithDNR()
		}
		return c.discoveryLog(b, off, cmd.RAE())
	}
	var page []byte
	switch lid {
	case nvme.LogError:
		page = make([]byte, nvme.ErrorLogEntrySize) // ELPE 0: one entry, never used
	case nvme.LogSMART:
		page = c.smartLog()
	case nvme.LogFirmwareSlot:
		page = make([]byte, nvme.FirmwareSlotLogSize)
		fw := nvme.FirmwareSlotLog{AFI: 1}
		fw.FRS[0] = c.t.opts.FirmwareRevision
		_ = fw.Marshal(page) // sized above
	case nvme.LogChangedNSList:
		return c.changedNSLog(b, off, cmd.RAE())
	case nvme.LogCommandsEffects:
		page = commandsEffects()
	case nvme.LogANA:
		return c.anaLog(b, off, cmd.LSP(), cmd.RAE())
	default:
		return nvme.StatusInvalidLogPage.WithDNR()
	}
	return copyLog(b, page, off)
}

// copyLog copies page[off:] into b and zeroes the rest of b.
func copyLog(b, page []byte, off uint64) nvme.Status {
	if off >= uint64(len(page)) {
		return nvme.StatusInvalidField.WithDNR()
	}
	n := copy(b, page[off:])
	clear(b[n:])
	return nvme.StatusSuccess
}

// dataUnits converts bytes to SMART data units: thousands of 512-byte
// units, rounded up.
func dataUnits(bytes uint64) uint64 {
	return bytes/512000 + min(bytes%512000, 1)
}

// smartLog builds the SMART / Health Information log of c (controller
// wide; the same for any NSID, LPA bit 0 being clear). Only the traffic
// counters are real; spare is reported as 100% (virtual media).
func (c *Controller) smartLog() []byte {
	var s Stats
	c.stats.sum(&s)
	l := nvme.SMARTLog{
		AvailSpare:       100,
		SpareThresh:      10,
		DataUnitsRead:    dataUnits(s.BytesRead),
		DataUnitsWritten: dataUnits(s.BytesWritten),
		HostReads:        s.ReadCommands,
		HostWrites:       s.WriteCommands,
	}
	page := make([]byte, nvme.SMARTLogSize)
	_ = l.Marshal(page) // sized above
	return page
}

// changedNSLog serves the Changed Namespace List. Unless RAE is set the
// list is cleared and the Namespace Attribute Changed event re-armed.
func (c *Controller) changedNSLog(b []byte, off uint64, rae bool) nvme.Status {
	if off >= nvme.ChangedNSListSize {
		return nvme.StatusInvalidField.WithDNR()
	}
	page := make([]byte, nvme.ChangedNSListSize)
	c.mu.Lock()
	if c.changedOV {
		nvme.MarshalChangedNSList(page, []uint32{nvme.ChangedNSListOverflow})
	} else {
		ids := slices.Clone(c.changedNS)
		slices.Sort(ids)
		nvme.MarshalChangedNSList(page, ids)
	}
	if !rae {
		c.changedNS = c.changedNS[:0]
		c.changedOV = false
		c.masked &^= nvme.AECNSAttr
	}
	c.mu.Unlock()
	return copyLog(b, page, off)
}

// commandsEffects builds the Commands Supported and Effects log.
func commandsEffects() []byte {
	var l nvme.CommandsEffectsLog
	for _, op := range []uint8{nvme.AdminGetLogPage, nvme.AdminIdentify, nvme.AdminAbort,
		nvme.AdminSetFeatures, nvme.AdminGetFeatures, nvme.AdminAsyncEvent, nvme.AdminKeepAlive} {
		l.ACS[op] = nvme.CECSUPP
	}
	l.IOCS[nvme.IOFlush] = nvme.CECSUPP
	l.IOCS[nvme.IORead] = nvme.CECSUPP
	l.IOCS[nvme.IOWrite] = nvme.CECSUPP | nvme.CELBCC
	l.IOCS[nvme.IOWriteZeroes] = nvme.CECSUPP | nvme.CELBCC
	l.IOCS[nvme.IODatasetMgmt] = nvme.CECSUPP | nvme.CELBCC
	page := make([]byte, nvme.CommandsEffectsLogSize)
	_ = l.Marshal(page) // sized above
	return page
}

package target

import (
	"bytes"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev/null"
	"github.com/rdmablk/rdmablk/nvme"
)

// TestLinuxHostConnectSequence replays what the Linux nvme host does on
// "nvme connect": admin Connect, properties, enable, identify, features,
// namespace scan, logs, keep alive, then I/O queue connects.
func TestLinuxHostConnectSequence(t *testing.T) {
	tg := newTestTarget(t, Options{MaxIOQueues: 4, FirmwareRevision: "1.2.3"})
	uuid := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	eui := [8]byte{0xAA, 1, 2, 3, 4, 5, 6, 7}
	_, err := tg.AddSubsystem(SubsystemConfig{
		NQN: testSubNQN, Serial: "SN-42", Model: "rdmablk test", Hosts: []string{testHostNQN},
		Namespaces: []NamespaceConfig{
			{NSID: 1, Backend: null.New(1<<20, 512), UUID: uuid, EUI64: eui},
			memNS(7, 1000, 4096),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := newHost(t, tg, 32)

	// Before Connect only fabrics commands are allowed.
	var kaSQE nvme.SQE
	kaSQE.SetKeepAlive()
	a.expect(kaSQE, nil, nvme.StatusCommandSequenceError)

	r := a.connect(0, 31, 15000, testSubNQN, testHostNQN, nvme.DynamicCNTLID)
	if !r.Status().OK() {
		t.Fatalf("connect: %v", r.Status())
	}
	cntlid := uint16(r.CQE.DW0())
	if cntlid < 1 || cntlid > 0xFFEF {
		t.Fatalf("CNTLID %#x", cntlid)
	}
	if r.CQE.SQID() != 0 || r.CQE.SQHD() != 2 {
		t.Fatalf("connect CQE SQID %d SQHD %d, want 0 and 2", r.CQE.SQID(), r.CQE.SQHD())
	}
	if c := a.q.Controller(); c == nil || c.ID() != cntlid || c.HostNQN() != testHostNQN || c.SubNQN() != testSubNQN {
		t.Fatalf("queue controller %+v", c)
	}

	capv := a.propGet(nvme.PropCAP, true)
	if mqes := capv & nvme.CAPMQESMask; mqes != testDepth-1 {
		t.Errorf("CAP.MQES %d, want %d", mqes, testDepth-1)
	}
	if capv&nvme.CAPCQR == 0 || capv&nvme.CAPCSSNVM == 0 || capv>>nvme.CAPTOShift&0xFF == 0 ||
		capv>>nvme.CAPMPSMINShift&0xF != 0 {
		t.Errorf("CAP %#x: want CQR, CSS NVM, TO > 0, MPSMIN 0", capv)
	}
	if vs := a.propGet(nvme.PropVS, false); vs != nvme.VS13 {
		t.Errorf("VS %#x", vs)
	}
	// Admin commands before CC.EN: command sequence error.
	a.identify(nvme.CNSController, 0, nvme.StatusCommandSequenceError)
	if csts := a.propGet(nvme.PropCSTS, false); csts&nvme.CSTSRDY != 0 {
		t.Fatalf("CSTS.RDY before enable: %#x", csts)
	}
	a.enable()
	if csts := a.propGet(nvme.PropCSTS, false); csts != nvme.CSTSRDY {
		t.Fatalf("CSTS %#x after enable, want RDY", csts)
	}
	if cc := a.propGet(nvme.PropCC, false); cc != ccEnable {
		t.Fatalf("CC read back %#x", cc)
	}
	// NSSR is not supported; 8-byte access to a 4-byte property neither.
	var s nvme.SQE
	s.SetPropertySet(nvme.PropNSSR, false, 0x4E564D65)
	a.expect(s, nil, nvme.StatusInvalidField.WithDNR())
	s.SetPropertyGet(nvme.PropCSTS, true)
	a.expect(s, nil, nvme.StatusInvalidField.WithDNR())

	id, err := nvme.ParseIdentifyController(a.identify(nvme.CNSController, 0, nvme.StatusSuccess))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want uint64
	}{
		{"VID", uint64(id.VID), 0},
		{"RAB", uint64(id.RAB), 6},
		{"CMIC", uint64(id.CMIC), nvme.CMICMultiCtrl | nvme.CMICANA},
		{"MDTS", uint64(id.MDTS), 8}, // 2^8 × 4 KiB = 1 MiB
		{"CNTLID", uint64(id.CNTLID), uint64(cntlid)},
		{"VER", uint64(id.VER), nvme.VS13},
		{"OAES", uint64(id.OAES), nvme.OAESNSAttr | nvme.OAESANAChange},
		{"CNTRLTYPE", uint64(id.CNTRLTYPE), nvme.CntrlTypeIO},
		{"ACL", uint64(id.ACL), 3},
		{"AERL", uint64(id.AERL), 3},
		{"FRMW", uint64(id.FRMW), 3},
		{"LPA", uint64(id.LPA), nvme.LPACommandsEffects | nvme.LPAExtendedData},
		{"KAS", uint64(id.KAS), 1},
		{"SQES", uint64(id.SQES), 0x66},
		{"CQES", uint64(id.CQES), 0x44},
		{"MAXCMD", uint64(id.MAXCMD), testDepth},
		{"NN", uint64(id.NN), MaxNSID},
		{"ONCS", uint64(id.ONCS), nvme.ONCSDSM | nvme.ONCSWriteZeroes},
		{"FUSES", uint64(id.FUSES), 0},
		{"VWC", uint64(id.VWC), nvme.VWCPresent},
		{"SGLS", uint64(id.SGLS), nvme.SGLSSupported | nvme.SGLSKeyed | nvme.SGLSOffset},
		{"IOCCSZ", uint64(id.IOCCSZ), (64 + testICD) / 16},
		{"IORCSZ", uint64(id.IORCSZ), 1},
		{"ICDOFF", uint64(id.ICDOFF), 0},
		{"FCATT", uint64(id.FCATT), 0},
		{"MSDBD", uint64(id.MSDBD), 1},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("Identify %s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
	if id.SN != "SN-42" || id.MN != "rdmablk test" || id.FR != "1.2.3" || id.SubNQN != testSubNQN {
		t.Errorf("Identify SN %q MN %q FR %q SUBNQN %q", id.SN, id.MN, id.FR, id.SubNQN)
	}

	// Number of Queues: ask 8, granted MaxIOQueues 4 (0's based 3).
	if v := a.setFeature(nvme.FeatNumQueues, nvme.NumQueuesValue(8, 8), nvme.StatusSuccess); v != nvme.NumQueuesValue(4, 4) {
		t.Errorf("Number of Queues granted %#x", v)
	}
	if v := a.getFeature(nvme.FeatNumQueues, nvme.StatusSuccess); v != nvme.NumQueuesValue(4, 4) {
		t.Errorf("Get Number of Queues %#x", v)
	}
	a.setFeature(nvme.FeatNumQueues, 0xFFFF, nvme.StatusInvalidField.WithDNR())
	a.setFeature(nvme.FeatAsyncEventConfig, nvme.AECNSAttr|0xFF, nvme.StatusSuccess)
	if v := a.getFeature(nvme.FeatAsyncEventConfig, nvme.StatusSuccess); v != nvme.AECNSAttr {
		t.Errorf("AEC %#x, want only the supported NS attribute bit", v)
	}
	if v := a.getFeature(nvme.FeatKeepAliveTimer, nvme.StatusSuccess); v != 15000 {
		t.Errorf("KATO from Connect %d ms", v)
	}
	a.setFeature(nvme.FeatKeepAliveTimer, 5000, nvme.StatusSuccess)
	if v := a.getFeature(nvme.FeatKeepAliveTimer, nvme.StatusSuccess); v != 5000 {
		t.Errorf("KATO %d ms", v)
	}
	if v := a.getFeature(nvme.FeatVolatileWriteCache, nvme.StatusSuccess); v != 1 {
		t.Errorf("VWC %#x", v)
	}
	for _, fid := range []uint8{nvme.FeatArbitration, nvme.FeatPowerMgmt, nvme.FeatErrorRecovery,
		nvme.FeatIRQCoalesce, nvme.FeatWriteAtomicity, nvme.FeatTempThreshold} {
		a.getFeature(fid, nvme.StatusSuccess)
	}
	a.setFeature(nvme.FeatTempThreshold, 350, nvme.StatusSuccess)
	if v := a.getFeature(nvme.FeatTempThreshold, nvme.StatusSuccess); v != 350 {
		t.Errorf("temperature threshold %d", v)
	}
	a.getFeature(0x7E, nvme.StatusInvalidField.WithDNR())
	s.SetSetFeatures(nvme.FeatArbitration, 0)
	s.SetCDW(10, s.CDW10()|nvme.FeatSV)
	a.expect(s, nil, nvme.StatusFeatureNotSaveable.WithDNR())
	s.SetGetFeatures(nvme.FeatHostID, nvme.FeatHostIDEX)
	if hid := a.expect(s, make([]byte, 16), nvme.StatusSuccess).Data; !bytes.Equal(hid, testHostID[:]) {
		t.Errorf("Host Identifier %x", hid)
	}

	// Namespace scan.
	list := nvme.ParseNSList(a.identify(nvme.CNSActiveNSList, 0, nvme.StatusSuccess))
	if len(list) != 2 || list[0] != 1 || list[1] != 7 {
		t.Fatalf("active NS list %v", list)
	}
	if l := nvme.ParseNSList(a.identify(nvme.CNSActiveNSList, 1, nvme.StatusSuccess)); len(l) != 1 || l[0] != 7 {
		t.Fatalf("active NS list after 1: %v", l)
	}
	ns, err := nvme.ParseIdentifyNamespace(a.identify(nvme.CNSNamespace, 7, nvme.StatusSuccess))
	if err != nil {
		t.Fatal(err)
	}
	if ns.NSZE != 1000 || ns.NCAP != 1000 || ns.NUSE != 1000 || ns.NLBAF != 0 || ns.FLBAS != 0 ||
		ns.BlockSize() != 4096 || ns.NMIC&nvme.NMICShared == 0 || ns.NOIOB != 0 || ns.NGUID == [16]byte{} {
		t.Errorf("Identify Namespace 7 %+v", ns)
	}
	ns1, _ := nvme.ParseIdentifyNamespace(a.identify(nvme.CNSNamespace, 1, nvme.StatusSuccess))
	if ns1.NSZE != 1<<20 || ns1.BlockSize() != 512 || ns1.EUI64 != eui {
		t.Errorf("Identify Namespace 1 %+v", ns1)
	}
	// Inactive NSID in range: zeroes; 0 and broadcast: invalid namespace.
	if b := a.identify(nvme.CNSNamespace, 5, nvme.StatusSuccess); !bytes.Equal(b, make([]byte, len(b))) {
		t.Error("inactive namespace identify not zero")
	}
	a.identify(nvme.CNSNamespace, 0, nvme.StatusInvalidNamespace.WithDNR())
	a.identify(nvme.CNSNamespace, nsidBroadcast, nvme.StatusInvalidNamespace.WithDNR())
	a.identify(nvme.CNSNSDescList, 5, nvme.StatusInvalidNamespace.WithDNR())
	a.identify(0x55, 0, nvme.StatusInvalidField.WithDNR())
	descs, err := nvme.ParseNSDescriptors(a.identify(nvme.CNSNSDescList, 1, nvme.StatusSuccess))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint8][]byte{}
	for _, d := range descs {
		seen[d.Type] = d.ID
	}
	if !bytes.Equal(seen[nvme.NIDTUUID], uuid[:]) || !bytes.Equal(seen[nvme.NIDTEUI64], eui[:]) ||
		!bytes.Equal(seen[nvme.NIDTCSI], []byte{0}) || seen[nvme.NIDTNGUID] != nil {
		t.Errorf("descriptors %v", descs)
	}

	// Logs: changed NS list empty, SMART, firmware slot, effects, bad LID/offset.
	if l := nvme.ParseNSList(a.getLog(nvme.LogChangedNSList, 4096, 0, false, nvme.StatusSuccess)); len(l) != 0 {
		t.Errorf("changed NS list %v", l)
	}
	smart := a.getLog(nvme.LogSMART, 64, 0, false, nvme.StatusSuccess)
	if smart[3] != 100 {
		t.Errorf("SMART available spare %d", smart[3])
	}
	fw := a.getLog(nvme.LogFirmwareSlot, 512, 0, false, nvme.StatusSuccess)
	if fw[0] != 1 || string(fw[8:16]) != "1.2.3   " {
		t.Errorf("firmware slot log AFI %d FRS1 %q", fw[0], fw[8:16])
	}
	eff := a.getLog(nvme.LogCommandsEffects, 4096, 0, false, nvme.StatusSuccess)
	if le32(eff, 256+nvme.IOWrite)&(nvme.CECSUPP|nvme.CELBCC) != nvme.CECSUPP|nvme.CELBCC ||
		le32(eff, nvme.AdminIdentify) != nvme.CECSUPP {
		t.Error("commands effects log")
	}
	a.getLog(nvme.LogANA, 4096, 0, false, nvme.StatusSuccess) // ana_test.go checks it
	a.getLog(0x0D, 4096, 0, false, nvme.StatusInvalidLogPage.WithDNR())
	a.getLog(nvme.LogSMART, 64, 2, false, nvme.StatusInvalidField.WithDNR())
	a.getLog(nvme.LogSMART, 64, 512, false, nvme.StatusInvalidField.WithDNR())
	a.getLog(nvme.LogError, 64, 0, false, nvme.StatusSuccess)

	a.expect(kaSQE, nil, nvme.StatusSuccess)
	s = nvme.SQE{}
	s.SetOpcode(nvme.AdminAbort)
	if r := a.expect(s, nil, nvme.StatusSuccess); r.CQE.DW0()&1 != 1 {
		t.Error("Abort DW0 bit 0 should say not aborted")
	}
	s = nvme.SQE{}
	s.SetOpcode(nvme.AdminCreateIOSQ) // not over fabrics
	a.expect(s, nil, nvme.StatusInvalidOpcode.WithDNR())

	// I/O queues.
	io1 := newHost(t, tg, 64)
	r = io1.connect(1, 63, 0, testSubNQN, testHostNQN, cntlid)
	if !r.Status().OK() || r.CQE.SQID() != 1 || uint16(r.CQE.DW0()) != cntlid {
		t.Fatalf("I/O connect qid 1: %v sqid %d dw0 %#x", r.Status(), r.CQE.SQID(), r.CQE.DW0())
	}
	if io1.q.QID() != 1 || io1.q.Controller() != a.q.Controller() {
		t.Fatal("I/O queue not bound")
	}
	// Connect again on a connected queue.
	if r := io1.connect(1, 63, 0, testSubNQN, testHostNQN, cntlid); r.Status() != nvme.StatusCommandSequenceError.WithDNR() {
		t.Errorf("second connect on queue: %v", r.Status())
	}

	rejects := []struct {
		name   string
		qid    uint16
		sqsize uint16
		depth  int
		sub    string
		host   string
		cntlid uint16
		hostID [16]byte
		want   nvme.Status
		dw0    uint32
	}{
		{"bad CNTLID", 2, 31, 64, testSubNQN, testHostNQN, cntlid + 100, testHostID, nvme.StatusConnectInvalidParam.WithDNR(), 1<<16 | 16},
		{"host NQN mismatch", 2, 31, 64, testSubNQN, otherHost, cntlid, testHostID, nvme.StatusConnectInvalidParam.WithDNR(), 1<<16 | 16},
		{"host ID mismatch", 2, 31, 64, testSubNQN, testHostNQN, cntlid, [16]byte{9}, nvme.StatusConnectInvalidParam.WithDNR(), 1<<16 | 16},
		{"qid beyond granted", 5, 31, 64, testSubNQN, testHostNQN, cntlid, testHostID, nvme.StatusConnectInvalidParam.WithDNR(), 42},
		{"duplicate qid", 1, 31, 64, testSubNQN, testHostNQN, cntlid, testHostID, nvme.StatusCommandSequenceError.WithDNR(), 0},
		{"sqsize ≥ depth", 2, 64, 64, testSubNQN, testHostNQN, cntlid, testHostID, nvme.StatusConnectInvalidParam.WithDNR(), 44},
		{"sqsize 0", 2, 0, 64, testSubNQN, testHostNQN, cntlid, testHostID, nvme.StatusConnectInvalidParam.WithDNR(), 44},
		{"sqsize ≥ MQES+1", 2, testDepth, 65536, testSubNQN, testHostNQN, cntlid, testHostID, nvme.StatusConnectInvalidParam.WithDNR(), 44},
		{"unknown subsystem", 2, 31, 64, testSubNQN2, testHostNQN, cntlid, testHostID, nvme.StatusConnectInvalidParam.WithDNR(), 1<<16 | 256},
	}
	for _, rj := range rejects {
		h := newHost(t, tg, rj.depth)
		var s nvme.SQE
		s.SetConnect(rj.qid, rj.sqsize, 0, 0)
		r := h.do(s, connectData(rj.sub, rj.host, rj.cntlid, rj.hostID))
		if r.Status() != rj.want || r.CQE.DW0() != rj.dw0 {
			t.Errorf("%s: status %v DW0 %#x, want %v DW0 %#x", rj.name, r.Status(), r.CQE.DW0(), rj.want, rj.dw0)
		}
		if h.q.Controller() != nil {
			t.Errorf("%s: queue bound despite rejection", rj.name)
		}
	}
	// The highest granted QID works.
	io4 := newHost(t, tg, 64)
	if r := io4.connect(4, 31, 0, testSubNQN, testHostNQN, cntlid); !r.Status().OK() {
		t.Fatalf("qid 4: %v", r.Status())
	}
	// An I/O queue lost and reconnected gets its QID back.
	io4.q.Destroy()
	io4 = newHost(t, tg, 64)
	if r := io4.connect(4, 31, 0, testSubNQN, testHostNQN, cntlid); !r.Status().OK() {
		t.Fatalf("qid 4 reconnect: %v", r.Status())
	}

	st := tg.Stats()
	if st.Controllers != 1 || st.Subsystems != 1 || st.Namespaces != 2 || st.Ports != 1 || st.Commands == 0 || st.Errors == 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestConnectRejections(t *testing.T) {
	tg := newTestTarget(t, Options{})
	if _, err := tg.AddSubsystem(SubsystemConfig{NQN: testSubNQN, Hosts: []string{testHostNQN}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		sqsize uint16
		depth  int
		sub    string
		host   string
		cntlid uint16
		want   nvme.Status
		dw0    uint32
	}{
		{"host not allowed", 31, 32, testSubNQN, otherHost, nvme.DynamicCNTLID, nvme.StatusConnectInvalidHost.WithDNR(), 1<<16 | 512},
		{"unknown subsystem", 31, 32, testSubNQN2, testHostNQN, nvme.DynamicCNTLID, nvme.StatusConnectInvalidParam.WithDNR(), 1<<16 | 256},
		{"static CNTLID", 31, 32, testSubNQN, testHostNQN, 5, nvme.StatusConnectInvalidParam.WithDNR(), 1<<16 | 16},
		{"admin sqsize > 31", 32, 64, testSubNQN, testHostNQN, nvme.DynamicCNTLID, nvme.StatusConnectInvalidParam.WithDNR(), 44},
		{"admin sqsize ≥ depth", 31, 16, testSubNQN, testHostNQN, nvme.DynamicCNTLID, nvme.StatusConnectInvalidParam.WithDNR(), 44},
		{"empty host NQN", 31, 32, testSubNQN, "", nvme.DynamicCNTLID, nvme.StatusConnectInvalidParam.WithDNR(), 1<<16 | 512},
	}
	for _, c := range cases {
		h := newHost(t, tg, c.depth)
		r := h.connect(0, c.sqsize, 0, c.sub, c.host, c.cntlid)
		if r.Status() != c.want || r.CQE.DW0() != c.dw0 {
			t.Errorf("%s: %v DW0 %#x, want %v DW0 %#x", c.name, r.Status(), r.CQE.DW0(), c.want, c.dw0)
		}
	}

	h := newHost(t, tg, 32)
	// Bad record format.
	var s nvme.SQE
	s.SetConnect(0, 31, 0, 0)
	s[40] = 1
	h.expect(s, connectData(testSubNQN, testHostNQN, nvme.DynamicCNTLID, testHostID), nvme.StatusConnectIncompatibleFmt.WithDNR())
	// Short connect data.
	s.SetConnect(0, 31, 0, 0)
	h.expect(s, make([]byte, 512), nvme.StatusDataSGLLengthInvalid.WithDNR())
	// Unterminated host NQN.
	d := connectData(testSubNQN, testHostNQN, nvme.DynamicCNTLID, testHostID)
	for i := 512; i < 768; i++ {
		d[i] = 'x'
	}
	if r := h.do(s, d); r.Status() != nvme.StatusConnectInvalidParam.WithDNR() || r.CQE.DW0() != 1<<16|512 {
		t.Errorf("unterminated host NQN: %v %#x", r.Status(), r.CQE.DW0())
	}
	// Unknown fabrics command type; property before connect.
	s = nvme.SQE{}
	s.SetOpcode(nvme.OpFabrics)
	s.SetFCType(0x33)
	h.expect(s, nil, nvme.StatusInvalidOpcode.WithDNR())
	s.SetPropertyGet(nvme.PropCAP, true)
	h.expect(s, nil, nvme.StatusCommandSequenceError)

	// I/O queue to a controller that is not enabled yet.
	cntlid := h.connectAdmin(testSubNQN, testHostNQN, 0)
	io := newHost(t, tg, 32)
	if r := io.connect(1, 31, 0, testSubNQN, testHostNQN, cntlid); r.Status() != nvme.StatusCommandSequenceError.WithDNR() {
		t.Errorf("I/O connect before CC.EN: %v", r.Status())
	}
	// Property access on an I/O queue is not allowed.
	h.enable()
	io = newHost(t, tg, 32)
	if r := io.connect(1, 31, 0, testSubNQN, testHostNQN, cntlid); !r.Status().OK() {
		t.Fatal(r.Status())
	}
	s.SetPropertyGet(nvme.PropCAP, true)
	io.expect(s, nil, nvme.StatusInvalidOpcode.WithDNR())
	// Host removed from the subsystem cannot add queues.
	sub, _ := tg.Subsystem(testSubNQN)
	if err := sub.RemoveHost(testHostNQN); err != nil {
		t.Fatal(err)
	}
	io2 := newHost(t, tg, 32)
	if r := io2.connect(2, 31, 0, testSubNQN, testHostNQN, cntlid); r.Status() != nvme.StatusConnectInvalidHost.WithDNR() {
		t.Errorf("I/O connect after RemoveHost: %v", r.Status())
	}
}

func TestEnableRejectsBadCC(t *testing.T) {
	tg := newTestTarget(t, Options{})
	if _, err := tg.AddSubsystem(SubsystemConfig{NQN: testSubNQN, AllowAnyHost: true}); err != nil {
		t.Fatal(err)
	}
	h := newHost(t, tg, 32)
	h.connectAdmin(testSubNQN, testHostNQN, 0)
	h.propSet(nvme.PropCC, nvme.CCEN|7<<nvme.CCIOSQESShift|4<<nvme.CCIOCQESShift)
	if csts := h.propGet(nvme.PropCSTS, false); csts&nvme.CSTSCFS == 0 || csts&nvme.CSTSRDY != 0 {
		t.Fatalf("CSTS %#x after enable with IOSQES 7, want CFS", csts)
	}
	h.identify(nvme.CNSController, 0, nvme.StatusCommandSequenceError)
	// Reset clears it; a good enable works.
	h.propSet(nvme.PropCC, 0)
	h.enable()
	if csts := h.propGet(nvme.PropCSTS, false); csts != nvme.CSTSRDY {
		t.Fatalf("CSTS %#x", csts)
	}
	// Disable: not ready; admin commands fail again.
	h.propSet(nvme.PropCC, 0)
	if csts := h.propGet(nvme.PropCSTS, false); csts != 0 {
		t.Fatalf("CSTS %#x after disable", csts)
	}
	h.identify(nvme.CNSController, 0, nvme.StatusCommandSequenceError)
}

// TestSQHD checks SQHD wraps at the connected queue's size.
func TestSQHD(t *testing.T) {
	s := newIOSetup(t, Options{}, memNS(1, 64, 512))
	io := newHost(t, s.tg, 4)
	if r := io.connect(2, 3, 0, testSubNQN, testHostNQN, s.cntlid); !r.Status().OK() || r.CQE.SQHD() != 1 {
		t.Fatalf("connect %v SQHD %d", r.Status(), r.CQE.SQHD())
	}
	var fl nvme.SQE
	fl.SetFlush(1)
	want := []uint16{2, 3, 0, 1, 2}
	for i, w := range want {
		if r := io.expect(fl, nil, nvme.StatusSuccess); r.CQE.SQHD() != w || r.CQE.SQID() != 2 {
			t.Fatalf("command %d: SQHD %d SQID %d, want %d and 2", i, r.CQE.SQHD(), r.CQE.SQID(), w)
		}
	}
}

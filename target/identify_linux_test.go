package target

import (
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
)

// TestIdentifyControllerLinuxHostChecks pins the Identify Controller
// fields the Linux nvme-rdma host (6.1) checks when it connects; each
// failed check there makes `nvme connect` fail or logs an error. Found in
// the QEMU lab (test/lab): MNAN 0 with CMIC.ANA set gave "Invalid MNAN
// value 0" and EINVAL from nvme connect.
func TestIdentifyControllerLinuxHostChecks(t *testing.T) {
	s := newIOSetup(t, Options{}, memNS(1, 64, 512))
	id, err := nvme.ParseIdentifyController(s.admin.identify(nvme.CNSController, 0, nvme.StatusSuccess))
	if err != nil {
		t.Fatal(err)
	}
	if id.CMIC&nvme.CMICANA != 0 {
		// nvme_mpath_init_identify: 0 < MNAN ≤ NN, and the whole ANA log
		// (header, NANAGRPID descriptors, MNAN NSIDs) within MDTS.
		if id.MNAN == 0 || id.MNAN > id.NN {
			t.Errorf("CMIC reports ANA with MNAN %d, NN %d: Linux refuses the controller", id.MNAN, id.NN)
		}
		anaLog := 16 + 32*int(id.NANAGRPID) + 4*int(id.MNAN)
		if id.MDTS != 0 && anaLog > (1<<id.MDTS)*4096 {
			t.Errorf("ANA log of %d bytes exceeds MDTS (%d): Linux disables ANA", anaLog, (1<<id.MDTS)*4096)
		}
		if id.NANAGRPID == 0 || id.NANAGRPID > id.ANAGRPMAX {
			t.Errorf("NANAGRPID %d, ANAGRPMAX %d", id.NANAGRPID, id.ANAGRPMAX)
		}
	}
	// nvme-rdma: keyed SGL data blocks are mandatory; ICDOFF must be 0;
	// IOCCSZ counts 16-byte units and must hold at least the SQE.
	if id.SGLS&nvme.SGLSKeyed == 0 {
		t.Errorf("SGLS %#x lacks keyed SGL data blocks", id.SGLS)
	}
	if id.ICDOFF != 0 {
		t.Errorf("ICDOFF %d, nvme-rdma needs 0", id.ICDOFF)
	}
	if id.IOCCSZ < 4 {
		t.Errorf("IOCCSZ %d below the 64-byte SQE", id.IOCCSZ)
	}
	// nvme_init_ctrl_finish: the host's default queue (128 entries) should
	// not need clamping, and the keep-alive granularity is reported.
	if id.MAXCMD != 0 && id.MAXCMD < 128 {
		t.Logf("MAXCMD %d: the kernel host clamps its queue size", id.MAXCMD)
	}
	if id.KAS == 0 {
		t.Errorf("KAS 0")
	}
}

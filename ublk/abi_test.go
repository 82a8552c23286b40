package ublk

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"testing"
)

// Golden values are written from include/uapi/linux/ublk_cmd.h (6.12):
// _IOWR('u', nr, struct ublksrv_ctrl_cmd) = 0xc020_75nn, _IOR = 0x8020_75nn,
// _IOWR('u', nr, struct ublksrv_io_cmd) = 0xc010_75nn.
func TestOpcodes(t *testing.T) {
	for _, c := range []struct {
		name string
		got  uint32
		want uint32
	}{
		{"GET_DEV_INFO", uCmdGetDevInfo, 0x80207502},
		{"ADD_DEV", uCmdAddDev, 0xc0207504},
		{"DEL_DEV", uCmdDelDev, 0xc0207505},
		{"START_DEV", uCmdStartDev, 0xc0207506},
		{"STOP_DEV", uCmdStopDev, 0xc0207507},
		{"SET_PARAMS", uCmdSetParams, 0xc0207508},
		{"GET_PARAMS", uCmdGetParams, 0x80207509},
		{"START_USER_RECOVERY", uCmdStartUserRecovery, 0xc0207510},
		{"END_USER_RECOVERY", uCmdEndUserRecovery, 0xc0207511},
		{"GET_FEATURES", uCmdGetFeatures, 0x80207513},
		{"DEL_DEV_ASYNC", uCmdDelDevAsync, 0x80207514},
		{"FETCH_REQ", uIOFetchReq, 0xc0107520},
		{"COMMIT_AND_FETCH_REQ", uIOCommitAndFetchReq, 0xc0107521},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
		if cmdName(c.got) != c.name {
			t.Errorf("cmdName(%#x) = %q", c.got, cmdName(c.got))
		}
	}
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The goldens below are little-endian (the lab and CI are x86-64).
func skipBigEndian(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("golden bytes are little-endian")
	}
}

func TestCtrlCmdGolden(t *testing.T) {
	skipBigEndian(t)
	b := bytes.Repeat([]byte{0xee}, ctrlCmdSize)
	c := ctrlCmd{devID: 7, queueID: 0xffff, len: 64, addr: 0x1122334455667788, data: 4242}
	c.encode(b)
	want := unhex(t, ""+
		"07000000"+ // dev_id
		"ffff"+ // queue_id
		"4000"+ // len
		"8877665544332211"+ // addr
		"9210000000000000"+ // data[0]
		"0000"+"0000"+"00000000") // dev_path_len, pad, reserved
	if !bytes.Equal(b, want) {
		t.Fatalf("ctrl cmd\n got %x\nwant %x", b, want)
	}
}

func TestDevInfoGolden(t *testing.T) {
	skipBigEndian(t)
	d := DevInfo{NrHWQueues: 2, QueueDepth: 128, State: StateQuiesced, MaxIOBufBytes: 512 << 10, DevID: 3, ServerPID: 1234,
		Flags: FlagUserRecovery | FlagUserRecoveryReissue | FlagCmdIoctlEncode, ServerFlags: 0xab, OwnerUID: 1000, OwnerGID: 100}
	b := make([]byte, devInfoSize)
	d.encode(b)
	want := unhex(t, ""+
		"0200"+"8000"+"0200"+"0000"+ // nr_hw_queues, queue_depth, state, pad0
		"00000800"+"03000000"+ // max_io_buf_bytes, dev_id
		"d2040000"+"00000000"+ // ublksrv_pid, pad1
		"5800000000000000"+ // flags
		"ab00000000000000"+ // ublksrv_flags
		"e8030000"+"64000000"+ // owner_uid, owner_gid
		"0000000000000000"+"0000000000000000") // reserved1, reserved2
	if !bytes.Equal(b, want) {
		t.Fatalf("dev_info\n got %x\nwant %x", b, want)
	}
	got, err := decodeDevInfo(b)
	if err != nil || got != d {
		t.Fatalf("decode: %+v %v", got, err)
	}
	if _, err := decodeDevInfo(b[:devInfoSize-1]); err == nil {
		t.Fatal("short dev_info decoded")
	}
}

func TestParamsGolden(t *testing.T) {
	skipBigEndian(t)
	p := Params{Types: paramTypeBasic | paramTypeDiscard, Attrs: attrVolatileCache | attrFUA,
		LogicalBSShift: 9, PhysicalBSShift: 12, IOOptShift: 12, IOMinShift: 12, MaxSectors: 1024, DevSectors: 0x20000,
		DiscardGranularity: 4096, MaxDiscardSectors: 0x10000, MaxWriteZeroesSectors: 0x8000, MaxDiscardSegments: 1}
	b := make([]byte, paramsSize)
	p.encode(b)
	want := unhex(t, ""+
		"70000000"+"03000000"+ // len 112, types
		"0c000000"+"090c0c0c"+ // attrs, logical/physical/io_opt/io_min shifts
		"00040000"+"00000000"+ // max_sectors, chunk_sectors
		"0000020000000000"+ // dev_sectors
		"0000000000000000"+ // virt_boundary_mask
		"00000000"+"00100000"+"00000100"+"00800000"+"0100"+"0000"+ // discard
		"00000000000000000000000000000000"+ // devt
		"0000000000000000000000000000000000000000000000000000000000000000"+ // zoned
		"00000000") // tail padding to 112
	if !bytes.Equal(b, want) {
		t.Fatalf("params\n got %x\nwant %x", b, want)
	}
	got, err := decodeParams(b)
	if err != nil || got != p {
		t.Fatalf("decode: %+v %v", got, err)
	}
	// A kernel that fills less (older params) leaves the rest zero.
	ne.PutUint32(b[0:], 40)
	got, err = decodeParams(b)
	if err != nil || got.MaxDiscardSectors != 0 || got.DevSectors != p.DevSectors {
		t.Fatalf("short params: %+v %v", got, err)
	}
	ne.PutUint32(b[0:], paramsSize+1)
	if _, err := decodeParams(b); err == nil {
		t.Fatal("params len past the buffer decoded")
	}
}

func TestIOCmdAndDescGolden(t *testing.T) {
	skipBigEndian(t)
	b := make([]byte, ioCmdSize)
	encodeIOCmd(b, 1, 0x1f, -5, 0x7f0000001000)
	if want := unhex(t, "0100"+"1f00"+"fbffffff"+"00100000007f0000"); !bytes.Equal(b, want) {
		t.Fatalf("io cmd\n got %x\nwant %x", b, want)
	}
	d := decodeIODesc(unhex(t, "01200000"+"08000000"+"0010000000000000"+"00100000007f0000"))
	if d != (ioDesc{opFlags: iodOpWrite | iodFUA, nrSectors: 8, startSector: 0x1000, addr: 0x7f0000001000}) {
		t.Fatalf("io desc %+v", d)
	}
}

func FuzzDecodeDevInfo(f *testing.F) {
	b := make([]byte, devInfoSize)
	(&DevInfo{NrHWQueues: 1, QueueDepth: 1, MaxIOBufBytes: 4096}).encode(b)
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeDevInfo(b)
		if err != nil {
			return
		}
		if checkDevInfo(&d, 4096) == nil && (d.NrHWQueues == 0 || d.QueueDepth > maxQueueDepth || d.MaxIOBufBytes%4096 != 0) {
			t.Fatalf("checkDevInfo accepted %+v", d)
		}
		out := make([]byte, devInfoSize)
		d.encode(out)
		if d2, _ := decodeDevInfo(out); d2 != d {
			t.Fatalf("round trip %+v → %+v", d, d2)
		}
	})
}

func FuzzDecodeParams(f *testing.F) {
	b := make([]byte, paramsSize)
	(&Params{Types: paramTypeBasic, LogicalBSShift: 9, DevSectors: 8, MaxSectors: 8}).encode(b)
	f.Add(b)
	f.Add(b[:20])
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodeParams(b)
		if err != nil {
			return
		}
		lim, err := limitsFor(&p, 1<<20)
		if err != nil {
			return
		}
		if lim.devSectors == 0 || lim.devSectors >= 1<<55 || lim.maxIOSectors == 0 || lim.maxIOSectors > 1<<20>>9 {
			t.Fatalf("limitsFor accepted %+v → %+v", p, lim)
		}
	})
}

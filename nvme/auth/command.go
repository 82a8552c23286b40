package auth

import (
	"encoding/binary"
	"errors"

	"github.com/rdmablk/rdmablk/nvme"
)

// Fabrics Authentication Send / Receive command fields (NVMe-oF 1.1
// §3.4 / §3.5; NVMe Base 2.0 §6.2, §6.3; Linux struct
// nvmf_auth_send_command): CDW10 bits 7:0 reserved (NSSF), 15:8 SPSP0,
// 23:16 SPSP1, 31:24 SECP; CDW11 is TL (Send) or AL (Receive), the length
// of the data the SGL describes.
const (
	authSPSP0Off = 41
	authSPSP1Off = 42
	authSECPOff  = 43
	authLenOff   = 44
)

// SetAuthSend makes s a Fabrics Authentication Send carrying tl bytes of
// DH-HMAC-CHAP message (SECP E9h, SPSP 01h/01h). Like the nvme setters, it
// keeps the flags byte, the CID and SGL1.
func SetAuthSend(s *nvme.SQE, tl uint32) { setAuth(s, nvme.FabricsAuthSend, tl) }

// SetAuthReceive makes s a Fabrics Authentication Receive for up to al
// bytes.
func SetAuthReceive(s *nvme.SQE, al uint32) { setAuth(s, nvme.FabricsAuthRecv, al) }

func setAuth(s *nvme.SQE, fctype uint8, n uint32) {
	s.SetOpcode(nvme.OpFabrics)
	clear(s[4:24])
	clear(s[40:])
	s.SetFCType(fctype)
	s[authSPSP0Off], s[authSPSP1Off], s[authSECPOff] = SPSP0, SPSP1, SECP
	binary.LittleEndian.PutUint32(s[authLenOff:], n)
}

// AuthCmd is a view of an Authentication Send or Receive command.
type AuthCmd struct{ *nvme.SQE }

func (c AuthCmd) SECP() uint8  { return c.SQE[authSECPOff] }
func (c AuthCmd) SPSP0() uint8 { return c.SQE[authSPSP0Off] }
func (c AuthCmd) SPSP1() uint8 { return c.SQE[authSPSP1Off] }

// Length is TL (Send) or AL (Receive).
func (c AuthCmd) Length() uint32 { return binary.LittleEndian.Uint32(c.SQE[authLenOff:]) }

// MaxMessage bounds TL and AL a controller accepts: the largest message
// (a Reply with SHA-512 and an ffdhe8192 value) is 16+2*64+1024 bytes;
// Linux hosts use a 4 KiB buffer.
const MaxMessage = 8192

// Errors of AuthCmd.Check; each is an Invalid Field in Command status
// (with DNR); Check also says which byte (for the error log).
var (
	ErrSECP   = errors.New("auth: SECP is not E9h (NVMe in-band authentication)")
	ErrSPSP   = errors.New("auth: SPSP0/SPSP1 are not 01h")
	ErrLength = errors.New("auth: TL/AL is 0 or larger than 8 KiB")
)

// Check validates the security protocol fields and the length, as Linux
// nvmet does before it looks at the data. It returns the byte offset of
// the offending field in the SQE and the error.
func (c AuthCmd) Check() (int, error) {
	switch {
	case c.SECP() != SECP:
		return authSECPOff, ErrSECP
	case c.SPSP0() != SPSP0:
		return authSPSP0Off, ErrSPSP
	case c.SPSP1() != SPSP1:
		return authSPSP1Off, ErrSPSP
	case c.Length() == 0 || c.Length() > MaxMessage:
		return authLenOff, ErrLength
	}
	return 0, nil
}

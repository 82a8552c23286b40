package auth

import (
	"errors"
	"fmt"
	"io"
	"math/big"
)

// ffdheGroup is one RFC 7919 finite-field group: prime p, generator 2.
type ffdheGroup struct {
	p       *big.Int
	pMinus1 *big.Int
	size    int // len(p) in bytes: the length of every public value and shared secret
	expBits int // private exponent length (RFC 7919 §5.2 / Table: 225..400 bits)
}

var ffdheGroups = func() [FFDHE8192 + 1]*ffdheGroup {
	var gs [FFDHE8192 + 1]*ffdheGroup
	bits := [...]int{FFDHE2048: 225, FFDHE3072: 275, FFDHE4096: 325, FFDHE6144: 375, FFDHE8192: 400}
	for id := FFDHE2048; id <= FFDHE8192; id++ {
		p, ok := new(big.Int).SetString(ffdhePrimeHex[id], 16)
		if !ok {
			panic("auth: bad built-in ffdhe prime") // broken invariant, not input
		}
		gs[id] = &ffdheGroup{p: p, pMinus1: new(big.Int).Sub(p, big.NewInt(1)), size: (p.BitLen() + 7) / 8, expBits: bits[id]}
	}
	return gs
}()

var bigTwo = big.NewInt(2)

// ErrBadDHValue: a peer's DH public value is not in 2..p-2 or is longer
// than the prime. 0, 1 and p-1 would make the shared secret guessable.
var ErrBadDHValue = errors.New("auth: DH public value out of range or wrong length")

// DHPublicSize is the length of g's public values and shared secret in
// bytes (the prime's length), 0 for DHNull or an unknown group.
func (g DHGroupID) DHPublicSize() int {
	if g == DHNull || !g.Valid() {
		return 0
	}
	return ffdheGroups[g].size
}

// DHKey is an ephemeral DH key pair of one transaction.
type DHKey struct {
	group DHGroupID
	x     *big.Int
	// Public is g^x mod p, big-endian, left-padded to DHPublicSize.
	Public []byte
}

// GenerateDHKey draws a private exponent of the group's recommended length
// (top bit set) from rand and computes the public value. Not for DHNull.
//
// math/big's modular exponentiation is not constant time; the exponent is
// used for one transaction only.
func GenerateDHKey(rand io.Reader, g DHGroupID) (*DHKey, error) {
	if g == DHNull || !g.Valid() {
		return nil, fmt.Errorf("auth: no DH key for group %v", g)
	}
	grp := ffdheGroups[g]
	buf := make([]byte, (grp.expBits+7)/8)
	if _, err := io.ReadFull(rand, buf); err != nil {
		return nil, fmt.Errorf("auth: reading random exponent: %w", err)
	}
	x := new(big.Int).SetBytes(buf)
	x.SetBit(x, grp.expBits-1, 1)
	for i := grp.expBits; i < len(buf)*8; i++ {
		x.SetBit(x, i, 0)
	}
	return newDHKey(g, x), nil
}

func newDHKey(g DHGroupID, x *big.Int) *DHKey {
	grp := ffdheGroups[g]
	y := new(big.Int).Exp(bigTwo, x, grp.p)
	return &DHKey{group: g, x: x, Public: y.FillBytes(make([]byte, grp.size))}
}

// checkPublic validates a peer's public value for group g. Linux sends it
// left-padded to the prime's length, SPDK (BN_bn2bin) without leading zero
// bytes; both are accepted, longer values are not.
func checkPublic(g DHGroupID, pub []byte) (*big.Int, error) {
	grp := ffdheGroups[g]
	if len(pub) == 0 || len(pub) > grp.size {
		return nil, ErrBadDHValue
	}
	y := new(big.Int).SetBytes(pub)
	// 1 < y < p-1: rejects 0, 1, p-1 (the order-1 and order-2 elements) and y >= p.
	if y.Cmp(big.NewInt(1)) <= 0 || y.Cmp(grp.pMinus1) >= 0 {
		return nil, ErrBadDHValue
	}
	return y, nil
}

// SharedSecret computes peer^x mod p, big-endian, left-padded to the
// prime's length: the value Linux calls the session key and hashes into
// the augmented challenge. A bad peer value returns ErrBadDHValue.
func (k *DHKey) SharedSecret(peer []byte) ([]byte, error) {
	y, err := checkPublic(k.group, peer)
	if err != nil {
		return nil, err
	}
	grp := ffdheGroups[k.group]
	z := new(big.Int).Exp(y, k.x, grp.p)
	return z.FillBytes(make([]byte, grp.size)), nil
}

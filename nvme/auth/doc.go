// Package auth holds NVMe in-band authentication (DH-HMAC-CHAP, NVMe Base
// spec 2.0 §8.13 and §6.2/§6.3 Authentication Send/Receive; TP 8006): the
// DHHC-1 secret representation, the key transformation, the AUTH_* and
// DH-HMAC-CHAP_* message formats, the RFC 7919 ffdhe groups, the challenge
// responses, and a state machine for each side (Host, Controller) that
// drives one authentication transaction from message bytes in to message
// bytes out. It does no I/O and starts no goroutines; the transports carry
// the bytes in Authentication Send/Receive commands.
//
// Section numbers are NVMe Base 2.0's (§8.13.5 "DH-HMAC-CHAP"; Base 2.2
// moved it to §8.3.4.5). Facts were checked against the Linux implementation
// (drivers/nvme/common/auth.c, drivers/nvme/host/auth.c,
// drivers/nvme/target/auth.c and fabrics-cmd-auth.c, include/linux/nvme.h)
// and nvme-cli's gen-dhchap-key / check-dhchap-key; the code is our own.
//
// Interop notes: hash and DH ids, message layouts, the response inputs
// (field order, little-endian S and T_ID, the 00h SC_C byte, "HostHost" /
// "Controller", NUL between the NQNs) and the augmented challenge
// HMAC(H(session key), C) follow Linux, and agree with SPDK's independent
// implementation (lib/nvme/nvme_auth.c); peer DH values are accepted with
// or without leading zero bytes (SPDK strips them, Linux pads). Failure explanations follow Linux
// on each side (e.g. a bad DH value is "DH group not usable" at the
// controller, "incorrect payload" at the host). nvme-cli's
// gen-dhchap-key (libnvme) pre-transforms the key with --nqn when --hmac is
// not 0 — which nvme-cli releases do so was read differently in two sources
// and is not settled here; `rdmablk gen-dhchap-key` follows the libnvme
// source read last (it transforms), GenerateSecret does not. For random keys
// it makes no difference to interop: the string printed is the key used. Secure channel concatenation (SC_C != 0, TLS PSK derivation) is out
// of scope: it needs NVMe/TCP; GeneratedPSK is provided for its vector.
//
// Ownership and buffer lifetimes: Parse* functions and the state machines
// never retain their input; every slice they return is a fresh copy.
// Marshal functions return a new buffer of the exact message length.
//
// Secrets: Secret.Encode is the secret itself and must never be logged;
// Secret.String (and so %v of a config) is redacted.
// Key material is kept in ordinary Go memory (no zeroisation guarantees).
//
// Errors: bad input from the wire is reported as a *ProtocolError carrying
// the AUTH_Failure reason code explanation to send; a peer's AUTH_Failure
// is reported as a *Failure. Nothing here panics on any input.
//
// Concurrency: a Host or Controller is used by one goroutine at a time
// (one per queue and transaction); the package-level functions are safe
// for concurrent use. DH computations (math/big) are not constant time and
// take milliseconds for the larger groups: do not call them on an I/O path.
package auth

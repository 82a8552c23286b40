// Package guest holds the guest-initiator fault tests: an attachment
// (initiator Session served as an NBD export) driven by NBD clients with a
// verifying load while the target is SIGKILLed and restarted, QP errors
// are injected, the target disappears for longer than ctrl-loss-tmo, and
// multipath paths fail and return — on the soft provider, both profiles.
//
// fio-nbd.sh runs fio ioengine=nbd with crc32c verify through
// `rdmablk connect` against rdmablkd (needs fio; not part of go test), and
// lab-nbd.sh is the QEMU-lab scenario (kernel /dev/nbd0, mkfs, mount).
package guest

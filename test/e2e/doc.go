// Package e2e holds end-to-end tests of rdmablk: the initiator against the
// target over the soft verbs provider, in one process and with rdmablkd as
// a separate process, on both capability profiles.
package e2e

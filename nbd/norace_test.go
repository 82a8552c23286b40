//go:build !race

package nbd_test

const raceEnabled = false

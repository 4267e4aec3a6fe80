//go:build !race

package memserver_test

const raceOn = false

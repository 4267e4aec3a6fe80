//go:build race

package memserver_test

// raceOn: the race detector allocates on every synchronisation, so tests
// that count allocations skip under it.
const raceOn = true

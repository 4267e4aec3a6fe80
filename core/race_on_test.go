//go:build race

package core_test

// raceOn: the race detector allocates on every synchronisation, so tests
// that count allocations skip under it; make test-go runs them again
// without it.
const raceOn = true

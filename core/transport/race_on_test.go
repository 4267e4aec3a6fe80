//go:build race

package transport

// raceOn: the race detector allocates on every synchronisation, so tests
// that count allocations skip under it; make test-go runs them again
// without it.
const raceOn = true

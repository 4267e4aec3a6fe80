//go:build race

package fabric

// raceOn: under the race detector every instrumented access of the
// polling progress goroutine (shm) costs several times its normal CPU, so
// TestIdleCPU allows more there; make bench-fabric measures the figure of
// record without it.
const raceOn = true

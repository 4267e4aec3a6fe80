//go:build race

package fabric

// raceOn: under the race detector every instrumented access of a
// goroutine that wakes (the progress goroutines' polling after work, shm's
// before it sleeps on its doorbell) costs several times its normal CPU,
// so the idle tests allow more there; make bench-fabric measures the
// figure of record without it.
const raceOn = true

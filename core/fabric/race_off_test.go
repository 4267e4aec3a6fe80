//go:build !race

package fabric

// raceOn: see race_on_test.go.
const raceOn = false

//go:build !race

package transport

// raceOn: see race_on_test.go.
const raceOn = false

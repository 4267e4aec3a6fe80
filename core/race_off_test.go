//go:build !race

package core_test

// raceOn: see race_on_test.go.
const raceOn = false

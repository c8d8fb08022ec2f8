//go:build race

package faults

// raceEnabled: the suite runs under -race; with -soak the instances are
// then built with it too, and a data race in any of them fails the suite.
const raceEnabled = true

//go:build race

package submitter

const raceOn = true

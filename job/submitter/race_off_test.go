//go:build !race

package submitter

const raceOn = false

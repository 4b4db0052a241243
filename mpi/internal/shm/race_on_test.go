//go:build race

package shm

const raceOn = true

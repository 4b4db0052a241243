//go:build !race

package shm

const raceOn = false

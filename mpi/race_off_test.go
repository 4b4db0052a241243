//go:build !race

package mpi

const raceOn = false

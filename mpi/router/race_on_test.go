//go:build race

package router

const raceOn = true

package job

import (
	"fmt"
	"sort"
	"strings"
)

// Preference is a job's rank preference (CrossGrid's Rank expression, kept
// to what a worker's offer tells): which offers come first in rlist, and so
// which hosts placement uses first.
type Preference string

const (
	// PreferRTT puts the closest hosts first (P2P-MPI's latency-sorted
	// rlist). It is the default: locality is what MPI programs need most.
	PreferRTT Preference = "rtt"
	// PreferCores puts the hosts offering the most process slots first, so
	// fewer hosts carry the job; ties go to the closest.
	PreferCores Preference = "cores"
	// PreferMemory puts the hosts holding the most memory first; ties go to
	// the closest.
	PreferMemory Preference = "memory"
)

// ParsePreference reads a rank preference; "" is PreferRTT.
func ParsePreference(s string) (Preference, error) {
	switch p := Preference(strings.TrimSpace(s)); p {
	case "":
		return PreferRTT, nil
	case PreferRTT, PreferCores, PreferMemory:
		return p, nil
	}
	return "", fmt.Errorf("prefer: must be %q, %q or %q, got %q", PreferRTT, PreferCores, PreferMemory, s)
}

// OrderRList sorts rlist in the preference's order; every order ends with
// RTT and then peer ID, so it is deterministic. An unknown preference sorts
// by RTT.
func OrderRList(rlist []Offer, p Preference) {
	SortRList(rlist)
	switch p {
	case PreferCores:
		sort.SliceStable(rlist, func(i, j int) bool { return rlist[i].Slots > rlist[j].Slots })
	case PreferMemory:
		sort.SliceStable(rlist, func(i, j int) bool { return rlist[i].Memory > rlist[j].Memory })
	}
}

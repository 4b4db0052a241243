package job

import (
	"sort"
	"time"
)

// Sites of a job's hosts. Collectives combine within a host, then within a
// site, then across sites (the mpi package), so the submitter tells every
// host which of the job's hosts share its site: hosts whose owners set the
// same "site=NAME" label, and, among hosts without one, hosts the
// submitter measured at similar round trips. The RTT classes only see
// distance from the submitter: two far sites at the same distance from it
// look like one, which labels put right.

// Hosts sorted by RTT start a new class when the round trip jumps by more
// than siteGap and more than siteRatio times the previous one: loopback and
// LAN jitter never split a site, a WAN hop always does.
const (
	siteGap   = 2 * time.Millisecond
	siteRatio = 2
)

// SiteClasses numbers the site of each offer's host: labelled sites first,
// in the order they first appear, then the RTT classes of the unlabelled
// hosts, nearest first.
func SiteClasses(offers []Offer) []int {
	out := make([]int, len(offers))
	named := map[string]int{}
	var unnamed []int
	for i, o := range offers {
		if o.Site == "" {
			unnamed = append(unnamed, i)
			continue
		}
		id, ok := named[o.Site]
		if !ok {
			id = len(named)
			named[o.Site] = id
		}
		out[i] = id
	}
	sort.SliceStable(unnamed, func(a, b int) bool { return offers[unnamed[a]].RTT < offers[unnamed[b]].RTT })
	class := len(named)
	for k, i := range unnamed {
		if k > 0 {
			prev, cur := offers[unnamed[k-1]].RTT, offers[i].RTT
			if cur-prev > siteGap && cur > siteRatio*prev {
				class++
			}
		}
		out[i] = class
	}
	return out
}

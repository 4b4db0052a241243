package job

import "time"

// FloodSample is where the placement of a job stood at one moment of a
// reservation: the flood's radius, and the offers and slots in hand
// against the n x r processes needed. The session takes one on every offer
// and every radius; `zorilla submit` shows the latest as its progress line
// and the web view draws them over time.
type FloodSample struct {
	At     time.Time `json:"at"`
	Match  int       `json:"match"`  // which reservation (Record.Matches) it belongs to
	Radius int       `json:"radius"` // the flood's radius at that moment
	Offers int       `json:"offers"` // offers held
	Slots  int       `json:"slots"`  // process slots those offers hold
	Need   int       `json:"need"`   // processes the job needs: n x r
}

// MaxFloodSamples bounds the samples a record keeps: the first ones and the
// latest, as MaxHistory does for events.
const MaxFloodSamples = 128

// AppendSample adds s to ss, dropping the oldest after the first half
// beyond MaxFloodSamples.
func AppendSample(ss []FloodSample, s FloodSample) []FloodSample {
	if len(ss)+1 > MaxFloodSamples {
		keep := MaxFloodSamples / 2
		ss = append(ss[:keep:keep], ss[len(ss)+1-(MaxFloodSamples-keep):]...)
	}
	return append(ss, s)
}

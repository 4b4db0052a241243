package router

import "time"

// rttEstimate smooths round-trip samples as TCP does (RFC 6298): srtt and
// rttvar, with gains 1/8 and 1/4.
type rttEstimate struct {
	srtt, rttvar time.Duration
	samples      int
}

func (e *rttEstimate) add(sample time.Duration) {
	if e.samples == 0 {
		e.srtt, e.rttvar = sample, sample/2
	} else {
		d := e.srtt - sample
		if d < 0 {
			d = -d
		}
		e.rttvar = (3*e.rttvar + d) / 4
		e.srtt = (7*e.srtt + sample) / 8
	}
	e.samples++
}

// silenceFactor is how many retransmission timeouts (srtt + 4·rttvar) a
// peer may stay silent. Four: on a path where a ping's answer may take a
// second, five seconds of silence is not proof of death.
const silenceFactor = 4

// bound is the silence the measured path can explain, or zero before any
// sample.
func (e *rttEstimate) bound() time.Duration {
	if e.samples == 0 {
		return 0
	}
	return silenceFactor * (e.srtt + 4*e.rttvar)
}

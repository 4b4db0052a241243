package sim

import "time"

// reachable reports whether agents a and b can talk now: both up, and
// not on two sides of a cut.
func (w *World) reachable(a, b int) bool {
	if !w.agents[a].up || !w.agents[b].up {
		return false
	}
	ga, gb := w.topo.group(a), w.topo.group(b)
	return ga == gb || !w.cut[ga] && !w.cut[gb]
}

// delay is the one-way delay of a message from a to b: half the RTT, and
// now and then a spike.
func (w *World) delay(a, b int) time.Duration {
	d := w.topo.rtt(a, b) / 2
	if f := w.cfg.Faults; f.Spike > 0 && w.rng.Float64() < f.Spike {
		d += w.jitter(f.SpikeDelay, 0.5)
	}
	return d
}

// lost draws whether a message is lost.
func (w *World) lost() bool {
	f := w.cfg.Faults
	return f.Loss > 0 && w.rng.Float64() < f.Loss
}

// send sends a message from a to b, arriving as event k; false when it
// cannot get there (the sender then learns it as a failed call).
func (w *World) send(a, b int, k kind, j int32, data any) bool {
	w.stats.messages++
	if !w.reachable(a, b) || a != b && w.lost() {
		return false
	}
	w.push(w.delay(a, b), k, int32(b), j, data)
	return true
}

package sim

import (
	"time"

	"github.com/zorilla-p2p/zorilla/job"
)

// planFaults schedules the run's crashes, cuts and forged adverts; the
// submitters' crashes are scheduled once their jobs run (crashSubmitter).
func (w *World) planFaults() {
	f := w.cfg.Faults
	busy := w.cfg.Submit + w.cfg.Mix.RunTime*2 // when most happens
	if f.Crash > 0 {
		for i := range w.agents {
			if w.rng.Float64() < f.Crash {
				w.q.push(event{at: time.Duration(w.rng.Int64N(int64(busy))), kind: evCrash, agent: int32(i), job: -1})
			}
		}
	}
	for range f.Partitions {
		g := w.rng.IntN(len(w.topo.groups))
		t := time.Duration(w.rng.Int64N(int64(busy)))
		w.q.push(event{at: t, kind: evCut, agent: -1, job: int32(g)})
		w.q.push(event{at: t + w.jitter(f.Cut, 0.5), kind: evHeal, agent: -1, job: int32(g)})
	}
	for _, a := range w.agents {
		if a.liar {
			w.q.push(event{at: time.Duration(w.rng.Int64N(int64(busy))), kind: evForge, agent: a.idx, job: -1})
		}
	}
}

// crashSubmitter schedules the crash of j's submitter while j runs.
func (w *World) crashSubmitter(j *simJob) {
	if j.crashAt > 0 {
		w.push(time.Duration(j.crashAt*float64(j.runFor)), evSubCrash, j.sub, j.idx, nil)
		j.crashAt = 0
	}
}

// crash stops an agent: its processes die, its lease table is gone, the
// jobs it submitted lose their machine, and it restarts after a while. A
// job its record on disk says is running is re-attached at the restart
// (lifecycle's re-attach, from the record and the report journal); any
// other counts as ended (an agent that restarts does not resume a job it
// had not started).
func (w *World) crash(e event) {
	a := w.agents[e.agent]
	w.tracef(e, "crash")
	w.stats.crashes++
	for _, l := range sortedKeys(a.parts) {
		w.kill(a, a.parts[l], false)
	}
	a.up, a.downAt = false, w.now
	a.epoch++
	w.upVer++
	w.armGraces()
	for _, ji := range a.jobs {
		j := w.jobs[ji]
		if j.m == nil || j.gone || j.m.Ended() {
			continue
		}
		j.gone = true
		if j.rec.State == job.Running {
			j.detached = true // its record on disk says running: re-attached at the restart
			continue
		}
		w.stats.lostSubmitter++
		w.endJob(j, "submitter crashed")
	}
	down := w.cfg.Faults.Down
	if down <= 0 {
		down = 30 * time.Second
	}
	w.push(w.jitter(down, 0.5), evRestart, a.idx, -1, nil)
}

// restart brings an agent back with an empty lease table.
func (w *World) restart(e event) {
	a := w.agents[e.agent]
	if a.up {
		return
	}
	a.up = true
	a.epoch++
	w.upVer++
	a.parts = map[string]*part{}
	if err := w.newLeases(a); err != nil {
		w.violate(a.idx, "restart: %v", err)
	}
	w.tracef(e, "restart")
	for _, ji := range a.jobs {
		if j := w.jobs[ji]; j.detached {
			w.reattach(j)
		}
	}
	w.flushAll()
	w.thawAll()
}

// onCut cuts a site (or region) off, or heals it.
func (w *World) onCut(e event) {
	g := int(e.job)
	w.cut[g] = e.kind == evCut
	w.tracef(e, "%s cut=%v", w.topo.groups[g], w.cut[g])
	if w.cut[g] {
		w.armGraces()
	} else {
		w.flushAll()
		w.thawAll()
	}
}

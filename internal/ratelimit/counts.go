package ratelimit

import (
	"maps"
	"sync"
)

// Counts counts refusals by reason. Reasons are constants of the code that
// refuses, never strings a peer sent, so the map stays small. Safe for
// concurrent use; a nil *Counts counts nothing.
type Counts struct {
	mu sync.Mutex
	m  map[string]uint64
}

// Add counts one refusal for reason.
func (c *Counts) Add(reason string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]uint64{}
	}
	c.m[reason]++
}

// Snapshot returns a copy of the counts.
func (c *Counts) Snapshot() map[string]uint64 {
	out := map[string]uint64{}
	if c == nil {
		return out
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	maps.Copy(out, c.m)
	return out
}

package job

import (
	"context"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// An offer waits for a busy run loop as long as its job reserves (the
// loaded simulation lost answers to a 2 s bound), and is refused at the
// next poll once the job has stopped reserving, or when its wait ends.
func TestHandOffer(t *testing.T) {
	newSession := func() *session {
		ctx, stop := context.WithCancel(context.Background())
		t.Cleanup(stop)
		return &session{offers: make(chan offerIn), ctx: ctx, stop: stop}
	}
	type result struct{ r proto.OfferReply }
	hand := func(ss *session, ctx context.Context, poll chan time.Time) chan result {
		out := make(chan result, 1)
		go func() {
			out <- result{ss.handOffer(ctx, offerIn{reply: make(chan proto.OfferReply, 1)}, poll)}
		}()
		return out
	}

	t.Run("reserving: waits through many polls, then taken", func(t *testing.T) {
		ss := newSession()
		ss.reserving.Store(true)
		poll := make(chan time.Time)
		out := hand(ss, context.Background(), poll)
		for range 20 { // each poll is taken by handOffer itself: it is still waiting
			poll <- time.Now()
		}
		in := <-ss.offers
		in.reply <- proto.OfferReply{Keep: true}
		if r := (<-out).r; !r.Keep {
			t.Fatalf("offer not kept: %q", r.Reason)
		}
	})
	t.Run("no longer reserving: refused at the next poll", func(t *testing.T) {
		ss := newSession()
		poll := make(chan time.Time)
		out := hand(ss, context.Background(), poll)
		poll <- time.Now()
		if r := (<-out).r; r.Keep || r.Reason != "job no longer reserving" {
			t.Fatalf("reply %+v, want refused as no longer reserving", r)
		}
	})
	t.Run("the wait's bound", func(t *testing.T) {
		ss := newSession()
		ss.reserving.Store(true)
		ctx, cancel := context.WithCancel(context.Background())
		out := hand(ss, ctx, make(chan time.Time))
		cancel()
		if r := (<-out).r; r.Keep || r.Reason == "" {
			t.Fatalf("reply %+v, want refused", r)
		}
	})
	t.Run("job ended", func(t *testing.T) {
		ss := newSession()
		ss.reserving.Store(true)
		out := hand(ss, context.Background(), make(chan time.Time))
		ss.stop()
		if r := (<-out).r; r.Keep || r.Reason != "job ended" {
			t.Fatalf("reply %+v, want refused as job ended", r)
		}
	})
}

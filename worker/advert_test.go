package worker

import (
	"errors"
	"testing"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

func TestDecideAdvert(t *testing.T) {
	small, big := proto.Need{Job: "j1", N: 2, R: 2}, proto.Need{Job: "j1", N: 5, R: 2}
	tests := []struct {
		name string
		v    advertView
		need proto.Need
		want advertStep
	}{
		{"welcome", advertView{MaxJobProcs: 8}, small, advertStep{Note: true, Admit: true}},
		{"as large as taken", advertView{MaxJobProcs: 10}, big, advertStep{Note: true, Admit: true}},
		{"too large", advertView{MaxJobProcs: 8}, big, advertStep{Refused: RefusedJobTooLarge,
			Decline: Decision{Code: proto.DeclineSize, Detail: "n*r<=8"}}},
		{"draining", advertView{Draining: true, MaxJobProcs: 8}, small, advertStep{Refused: RefusedDraining,
			Decline: Decision{Code: proto.DeclineDraining}}},
		{"holds an offer", advertView{Held: true, MaxJobProcs: 8}, small, advertStep{Note: true}},
		{"holds an offer, too large", advertView{Held: true, MaxJobProcs: 1}, big, advertStep{Note: true}},
		{"an earlier run ends here", advertView{Held: true, Committed: true, Draining: true, MaxJobProcs: 8}, small,
			advertStep{Note: true, Decline: Decision{Code: proto.DeclineBusy, Detail: "its earlier run is still ending here"}}},
	}
	for _, c := range tests {
		if got := decideAdvert(c.v, c.need); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestAfterRefusal(t *testing.T) {
	fullRefusal := full(refuse(proto.DeclineBusy, "", "busy"))
	never := refuse(proto.DeclinePolicy, "", "denied")
	leased := errors.New("job already holds a lease here")
	tests := []struct {
		name             string
		d                Decision
		err              error
		listed, yielding bool
		want             refusalStep
	}{
		{"full, listed", fullRefusal, nil, true, false, refusalStep{Count: true, Decline: true, Contend: true}},
		{"full, not listed", fullRefusal, nil, false, false, refusalStep{Count: true, Decline: true}},
		{"full, yielding", fullRefusal, nil, true, true, refusalStep{Count: true, Decline: true}},
		{"never", never, nil, true, false, refusalStep{Count: true, Drop: true, Decline: true}},
		{"accepted, not reserved", Decision{Accept: true}, leased, true, false, refusalStep{Drop: true}},
	}
	for _, c := range tests {
		if got := afterRefusal(c.d, c.err, c.listed, c.yielding); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestBehindHigher(t *testing.T) {
	tests := []struct {
		name              string
		yielding, waiting bool
		top, honoured     int
		wait              bool
	}{
		{"alone", false, false, 0, 0, false},
		{"yielding", true, false, 0, 0, true},
		{"a higher job waits", false, true, 3, 2, true},
		{"an equal job waits", false, true, 2, 2, false},
		{"a lower job waits", false, true, 1, 2, false},
	}
	for _, c := range tests {
		d, wait := behindHigher(c.yielding, c.top, c.waiting, c.honoured)
		if wait != c.wait || wait && (d.Accept || !d.Full || d.Code != proto.DeclineBusy) {
			t.Errorf("%s: %+v, %v; want wait %v, refused as full and busy", c.name, d, wait, c.wait)
		}
	}
}

package worker

import (
	"reflect"
	"strings"
	"testing"

	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/mpi/router"
	"github.com/zorilla-p2p/zorilla/worker/proc"
)

func TestDecideCopyEnd(t *testing.T) {
	res := proc.Resources{MemoryBytes: 1 << 20, Pids: 8}
	p := proto.Proc{Rank: 2, Replica: 1}
	tests := []struct {
		name               string
		x                  proc.Exit
		replicas           int
		released           bool
		words, failedStart bool
		fail               string
	}{
		{"success", proc.Exit{}, 1, true, false, false, ""},
		{"a status", proc.Exit{Code: 3}, 2, true, false, false, "rank 2 exited with 3"},
		{"a signal", proc.Exit{Code: 137, Signal: "SIGKILL"}, 1, true, false, false, "rank 2 exited with 137"},
		{"a copy killed, released", proc.Exit{Code: 137, Signal: "SIGKILL"}, 2, true, false, false, ""},
		{"a copy killed in the start", proc.Exit{Code: 137, Signal: "SIGKILL"}, 2, false, false, true, ""},
		{"a copy timed out", proc.Exit{Code: 137, Signal: "SIGKILL", TimedOut: true}, 2, false, false, false, "exited with 137"},
		{"out of memory", proc.Exit{Code: 137, Signal: "SIGKILL", OutOfMemory: true}, 1, true, true, false, "exited with 137: stopped: out of memory"},
		{"a fork refused", proc.Exit{Code: 1, PidsLimit: true}, 1, true, true, false, "limit of 8 processes"},
	}
	for _, c := range tests {
		end := decideCopyEnd(p, c.x, res, c.replicas, c.released)
		if (end.Words != nil) != c.words || (end.FailedStart != nil) != c.failedStart ||
			(c.fail == "") != (end.Fail == nil) || end.Fail != nil && !strings.Contains(end.Fail.Error(), c.fail) {
			t.Errorf("%s: %+v, want words %v, failed start %v, fail %q", c.name, end, c.words, c.failedStart, c.fail)
			continue
		}
		if end.Words != nil && (end.Words.Kind != proto.RepOutput || end.Words.Stream != proc.Stderr || end.Words.Rank != 2 || end.Words.Replica != 1) {
			t.Errorf("%s: the sandbox's words as %+v", c.name, *end.Words)
		}
		if end.FailedStart != nil && (end.FailedStart.Kind != proto.RepFailed || !strings.Contains(end.FailedStart.Reason, "rank 2 copy 1")) {
			t.Errorf("%s: the failed start as %+v", c.name, *end.FailedStart)
		}
	}
}

func TestExitReports(t *testing.T) {
	p := proto.Proc{Rank: 1}
	failed, killed := proc.Exit{Code: 1}, proc.Exit{Code: 143, Signal: "SIGTERM", Killed: true}
	exit := func(x proc.Exit, lost string) proto.Report {
		return proto.Report{Kind: proto.RepExit, Rank: 1, Code: x.Code, Signal: x.Signal, Lost: lost}
	}
	lostHere := "its host was counted lost by the job's other hosts, which carried on"
	tests := []struct {
		name string
		x    proc.Exit
		f    mpiFailed
		want []proto.Report
	}{
		{"success", proc.Exit{}, mpiFailed{}, []proto.Report{exit(proc.Exit{}, "")}},
		{"a failure", failed, mpiFailed{}, []proto.Report{exit(failed, "")}},
		{"a success in a failed job", proc.Exit{}, mpiFailed{Failed: true, Left: true, Peer: "h"}, []proto.Report{exit(proc.Exit{}, "")}},
		{"a failure in a failed job", failed, mpiFailed{Failed: true}, []proto.Report{exit(failed, "")}},
		{"this host left", killed, mpiFailed{Failed: true, Left: true}, []proto.Report{exit(killed, lostHere)}},
		{"a host lost", failed, mpiFailed{Failed: true, Peer: "h"},
			[]proto.Report{{Kind: proto.RepPeerLost, Peer: "h"}, exit(failed, "")}},
	}
	for _, c := range tests {
		if got := exitReports(p, c.x, c.f); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v\nwant %+v", c.name, got, c.want)
		}
	}
	if f := failedOf(&router.Failure{Peer: "h"}); f != (mpiFailed{Failed: true, Peer: "h"}) {
		t.Errorf("failedOf: %+v", f)
	}
	if f := failedOf(nil); f.Failed {
		t.Errorf("failedOf(nil): %+v", f)
	}
}

func TestMPIReport(t *testing.T) {
	tests := []struct {
		e    router.Event
		want proto.Report
		ok   bool
	}{
		{router.Event{Kind: router.EventAbort, Rank: 3, Code: 7}, proto.Report{Kind: proto.RepAbort, Rank: 3, Code: 7}, true},
		{router.Event{Kind: router.EventAbort, Rank: 3, Code: 7, Peer: "h"}, proto.Report{}, false},
		{router.Event{Kind: router.EventPeerLost, Peer: "h"}, proto.Report{Kind: proto.RepPeerLost, Peer: "h"}, true},
		{router.Event{Kind: router.EventInit, Rank: 0}, proto.Report{}, false},
		{router.Event{Kind: router.EventFailed}, proto.Report{}, false},
	}
	for _, c := range tests {
		if got, ok := mpiReport(c.e); ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v: %+v, %v; want %+v, %v", c.e.Kind, got, ok, c.want, c.ok)
		}
	}
}

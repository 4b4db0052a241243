package proto

import (
	"reflect"
	"testing"
)

func TestShmRoundTrip(t *testing.T) {
	m := Shm{Rings: []ShmRing{{Peer: 3, Dir: RingOut}, {Peer: 3, Dir: RingIn}, {Peer: 0, Dir: RingOut}}}
	g, err := DecodeShm(m.Encode().Body())
	if err != nil || !reflect.DeepEqual(g, m) {
		t.Fatalf("shm: %+v %v", g, err)
	}
	on := ShmOn{Peers: []uint32{1, 5}}
	h, err := DecodeShmOn(on.Encode().Body())
	if err != nil || !reflect.DeepEqual(h, on) {
		t.Fatalf("shmon: %+v %v", h, err)
	}
	hello := Hello{Version: Version, Rank: 1, Size: 2, Job: "j", Key: "k", Flags: HelloShm}
	if g, err := DecodeHello(hello.Encode().Body()); err != nil || g != hello {
		t.Fatalf("hello with flags: %+v %v", g, err)
	}
	old := Hello{Version: Version, Rank: 1, Size: 2, Job: "j", Key: "k"}
	if f := old.Encode(); len(f) != HeaderLen+2+12+2+1+2+1 {
		t.Fatalf("hello without flags is %d bytes: a flag byte was added", len(f))
	}
}

func TestShmRefused(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":         nil,
		"count too big": {200, 0, 0, 0},
		"short":         {1, 0, 0, 0, 1, 0, 0},
		"bad direction": {1, 0, 0, 0, 1, 0, 0, 0, 2},
		"trailing":      {1, 0, 0, 0, 1, 0, 0, 0, 0, 9},
		"huge count":    {0xff, 0xff, 0xff, 0xff},
	} {
		if m, err := DecodeShm(b); err == nil {
			t.Errorf("%s: decoded %+v", name, m)
		}
	}
	for name, b := range map[string][]byte{
		"empty":      nil,
		"short":      {2, 0, 0, 0, 1, 0, 0, 0},
		"huge count": {0xff, 0xff, 0xff, 0xff},
	} {
		if m, err := DecodeShmOn(b); err == nil {
			t.Errorf("%s: decoded %+v", name, m)
		}
	}
}

func FuzzDecodeShm(f *testing.F) {
	f.Add(Shm{Rings: []ShmRing{{Peer: 1, Dir: RingIn}}}.Encode().Body())
	f.Add(ShmOn{Peers: []uint32{1, 2}}.Encode().Body())
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := DecodeShm(b); err == nil {
			if g, err := DecodeShm(m.Encode().Body()); err != nil || !reflect.DeepEqual(g, m) {
				t.Fatalf("shm re-encode: %+v %v", g, err)
			}
		}
		if m, err := DecodeShmOn(b); err == nil {
			if g, err := DecodeShmOn(m.Encode().Body()); err != nil || !reflect.DeepEqual(g, m) {
				t.Fatalf("shmon re-encode: %+v %v", g, err)
			}
		}
	})
}

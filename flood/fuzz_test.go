package flood

import (
	"bytes"
	"math/rand"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

var fuzzNow = time.Unix(1_700_000_000, 0)

var fuzzLimits = limits{maxTTL: 10, maxLifetime: 10 * time.Minute}

// seedMessage is a valid message, deterministic (seeded Ed25519 key).
func seedMessage(t testing.TB, mutate func(*Advert)) []byte {
	sk, _, err := crypto.GenerateEd25519Key(rand.New(rand.NewSource(42)))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := peer.IDFromPrivateKey(sk)
	a := Advert{
		Job: "job-1", Submitter: id, Body: []byte(`{"job":"job-1","n":4,"r":1,"req":{}}`),
		Addrs:  []ma.Multiaddr{ma.StringCast("/ip4/127.0.0.1/tcp/4001")},
		Issued: fuzzNow, Expires: fuzzNow.Add(5 * time.Minute),
	}
	if mutate != nil {
		mutate(&a)
	}
	env, err := seal(a, sk)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := encodeMessage(env, 3)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

func TestDecodeRoundTrip(t *testing.T) {
	a, err := decodeMessage(seedMessage(t, nil), fuzzLimits, fuzzNow)
	if err != nil {
		t.Fatal(err)
	}
	if a.Job != "job-1" || a.TTL != 3 || len(a.Addrs) != 1 || !a.Expires.Equal(fuzzNow.Add(5*time.Minute)) ||
		!bytes.Contains(a.Body, []byte(`"n":4`)) {
		t.Fatalf("decoded %+v", a)
	}
	if _, err := decodeMessage(seedMessage(t, nil), fuzzLimits, fuzzNow.Add(5*time.Minute)); reasonOf(err) != DropExpired {
		t.Fatalf("at expiry: %v", err)
	}
}

// FuzzDecodeMessage feeds the wire decoder arbitrary bytes: it must never
// panic, and whatever it accepts must satisfy every bound and re-encode to
// the same advert.
func FuzzDecodeMessage(f *testing.F) {
	f.Add(seedMessage(f, nil))
	f.Add(seedMessage(f, func(a *Advert) { a.Addrs = nil; a.Body = nil }))
	f.Add(seedMessage(f, func(a *Advert) { a.Submitter = "QmForged" }))
	f.Add([]byte(`{"ttl":1,"envelope":""}`))
	f.Add([]byte(`{"ttl":99,"envelope":"AAAA"}`))
	f.Add([]byte(`{"ttl":1,"envelope":"CgQIARIA"}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`not json`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := decodeMessage(b, fuzzLimits, fuzzNow)
		if err != nil {
			if reasonOf(err) == "" {
				t.Fatalf("error without a reason: %v", err)
			}
			return
		}
		switch {
		case a.TTL < 1 || a.TTL > fuzzLimits.maxTTL:
			t.Fatalf("accepted TTL %d", a.TTL)
		case a.Job == "" || len(a.Job) > MaxJobLen || len(a.Addrs) > MaxAddrs:
			t.Fatalf("accepted fields out of bounds: %+v", a)
		case !fuzzNow.Before(a.Expires) || a.Expires.Sub(fuzzNow) > fuzzLimits.maxLifetime:
			t.Fatalf("accepted expiry %v", a.Expires)
		}
		again, err := encodeMessage(a.env, a.TTL)
		if err != nil {
			t.Fatal(err)
		}
		b2, err := decodeMessage(again, fuzzLimits, fuzzNow)
		if err != nil || b2.Job != a.Job || b2.Submitter != a.Submitter || b2.TTL != a.TTL ||
			!bytes.Equal(b2.Body, a.Body) || !b2.Expires.Equal(a.Expires) {
			t.Fatalf("re-decode: %+v, %v; first %+v", b2, err, a)
		}
	})
}

// FuzzAdvertRecord fuzzes what lies behind the signature, which random
// bytes cannot reach through FuzzDecodeMessage: the record's decoding and
// field checks.
func FuzzAdvertRecord(f *testing.F) {
	f.Add([]byte(`{"job":"j","submitter":"12D3KooWGzPm1h8RFqT8JtxC5LkZMGoEZtkG1u3QhqyAixgjr2W8","addrs":["/ip4/1.2.3.4/tcp/1"],"body":"e30=","issued":1,"expires":2}`))
	f.Add([]byte(`{"job":"","submitter":"x","issued":0,"expires":0}`))
	f.Add([]byte(`{"job":"j","submitter":"12D3KooWGzPm1h8RFqT8JtxC5LkZMGoEZtkG1u3QhqyAixgjr2W8","addrs":["/bogus"],"issued":1,"expires":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var rec advertRecord
		if err := rec.UnmarshalRecord(b); err != nil {
			return
		}
		a, err := rec.advert()
		if err != nil {
			if reasonOf(err) != DropGarbage {
				t.Fatalf("field error counted as %s: %v", reasonOf(err), err)
			}
			return
		}
		if a.Job == "" || len(a.Job) > MaxJobLen || len(a.Addrs) > MaxAddrs || a.Submitter.Validate() != nil {
			t.Fatalf("accepted out of bounds: %+v", a)
		}
		_ = checkTimes(a, fuzzLimits.maxLifetime, fuzzNow)
	})
}

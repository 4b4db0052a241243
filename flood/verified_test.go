package flood

import (
	"fmt"
	"testing"
)

// sealedEnvelope is the envelope of seedMessage's advert for job.
func sealedEnvelope(t *testing.T, job string) []byte {
	t.Helper()
	m, err := decodeFrame(seedMessage(t, func(a *Advert) { a.Job = job }), fuzzLimits)
	if err != nil {
		t.Fatal(err)
	}
	return m.Envelope
}

func TestVerifiedCache(t *testing.T) {
	good, other := sealedEnvelope(t, "job-1"), sealedEnvelope(t, "job-2")
	forged := append([]byte(nil), good...)
	forged[len(forged)-1] ^= 1 // the signature's last byte
	for _, tc := range []struct {
		name    string
		opens   [][]byte
		verifes int // calls of the real check
		bad     int // opens that failed
	}{
		{"one envelope, many copies", [][]byte{good, good, good, good}, 1, 0},
		{"two envelopes interleaved", [][]byte{good, other, good, other}, 2, 0},
		{"a forgery is checked every time", [][]byte{forged, forged, good, forged}, 4, 3},
		{"a forgery does not spoil the good copy", [][]byte{good, forged, good}, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newVerifiedCache(4)
			calls := 0
			c.verify = func(env []byte) (Advert, error) { calls++; return openEnvelope(env) }
			bad := 0
			for _, env := range tc.opens {
				a, err := c.open(env)
				switch {
				case err != nil:
					bad++
					if reasonOf(err) != DropBadSignature {
						t.Errorf("forgery dropped as %s: %v", reasonOf(err), err)
					}
				case a.Job == "" || a.TTL != 0:
					t.Errorf("advert %+v", a)
				}
			}
			if calls != tc.verifes || bad != tc.bad {
				t.Fatalf("%d checks and %d failures, want %d and %d", calls, bad, tc.verifes, tc.bad)
			}
		})
	}
}

func TestVerifiedCacheBound(t *testing.T) {
	c := newVerifiedCache(3)
	var envs [][]byte
	for i := range 5 {
		envs = append(envs, sealedEnvelope(t, fmt.Sprintf("job-%d", i)))
		if _, err := c.open(envs[i]); err != nil {
			t.Fatal(err)
		}
		if len(c.adverts) > 3 || len(c.order) > 3 {
			t.Fatalf("after %d envelopes: %d adverts, %d keys held, bound 3", i+1, len(c.adverts), len(c.order))
		}
	}
	calls := 0
	c.verify = func(env []byte) (Advert, error) { calls++; return openEnvelope(env) }
	for _, tc := range []struct {
		i, calls int
	}{{4, 0}, {2, 0}, {3, 0}, {0, 1}, {1, 2}, {4, 2}, {2, 3}} { // 0 and 1 had left, oldest first; each new one pushes out the oldest
		a, err := c.open(envs[tc.i])
		if err != nil || a.Job != fmt.Sprintf("job-%d", tc.i) || calls != tc.calls {
			t.Fatalf("envelope %d: %+v, %v, %d checks, want %d", tc.i, a, err, calls, tc.calls)
		}
	}
}

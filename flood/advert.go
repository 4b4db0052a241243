package flood

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/record"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/zorilla-p2p/zorilla/internal/wire"
)

// Bounds on the fields of an advert.
const (
	MaxJobLen = 256 // bytes of a job ID
	MaxAddrs  = 16  // submitter addresses carried
)

// Errors of decoding and checking an advert. Each maps to a DropReason.
var (
	ErrBadSignature = errors.New("flood: bad signature")
	ErrOversized    = errors.New("flood: advert too large")
	ErrTTLOverCap   = errors.New("flood: ttl over cap")
	ErrGarbage      = errors.New("flood: malformed advert")
	ErrExpired      = errors.New("flood: advert expired")
	errRecord       = errors.New("flood: bad advert record")
)

// Advert is a job advertisement as flooded. Everything but TTL is covered by
// the submitter's signature.
type Advert struct {
	Job       string         // job ID
	Submitter peer.ID        // who signed it; offers go straight back to it
	Addrs     []ma.Multiaddr // the submitter's addresses, so workers can dial it
	Body      []byte         // opaque to flood (a job.EncodeNeed output)
	TTL       int            // remaining radius; changes per hop, not signed
	Issued    time.Time      // when the submitter signed it
	Expires   time.Time      // after this the advert is dropped

	env []byte // the signed envelope, forwarded unchanged
}

// The record inside the signed envelope (libp2p core/record).
const advertDomain = "zorilla-flood-advert"

var advertCodec = []byte("/zorilla/flood/advert/1")

type advertRecord struct {
	Job       string   `json:"job"`
	Submitter string   `json:"submitter"`
	Addrs     []string `json:"addrs,omitempty"`
	Body      []byte   `json:"body,omitempty"`
	Issued    int64    `json:"issued"`  // unix nanoseconds
	Expires   int64    `json:"expires"` // unix nanoseconds
}

func (*advertRecord) Domain() string { return advertDomain }
func (*advertRecord) Codec() []byte  { return advertCodec }

func (r *advertRecord) MarshalRecord() ([]byte, error) { return json.Marshal(r) }

func (r *advertRecord) UnmarshalRecord(b []byte) error {
	if err := wire.DecodeJSON(b, r); err != nil {
		return fmt.Errorf("%w: %w", errRecord, err)
	}
	return nil
}

// message is what one stream carries: a TTL and a signed envelope.
type message struct {
	TTL      int    `json:"ttl"`
	Envelope []byte `json:"envelope"`
}

func encodeMessage(env []byte, ttl int) ([]byte, error) {
	b, err := json.Marshal(message{TTL: ttl, Envelope: env})
	if err != nil {
		return nil, fmt.Errorf("flood: encode message: %w", err)
	}
	return b, nil
}

// limits are what decodeMessage checks against.
type limits struct {
	maxTTL      int
	maxLifetime time.Duration
}

// decodeMessage decodes and checks one message received at now. It trusts
// nothing: the error wraps one of the Err* sentinels above.
func decodeMessage(b []byte, lim limits, now time.Time) (Advert, error) {
	m, err := decodeFrame(b, lim)
	if err != nil {
		return Advert{}, err
	}
	a, err := openEnvelope(m.Envelope)
	if err != nil {
		return Advert{}, err
	}
	return withTTL(a, m.TTL, lim, now)
}

// decodeFrame decodes a message's outer layer, a TTL and the envelope,
// and checks the TTL; the envelope is not opened.
func decodeFrame(b []byte, lim limits) (message, error) {
	var m message
	if err := wire.DecodeJSON(b, &m); err != nil {
		return message{}, fmt.Errorf("%w: %w", ErrGarbage, err)
	}
	if m.TTL < 1 {
		return message{}, fmt.Errorf("%w: ttl %d", ErrGarbage, m.TTL)
	}
	if m.TTL > lim.maxTTL {
		return message{}, fmt.Errorf("%w: %d > %d", ErrTTLOverCap, m.TTL, lim.maxTTL)
	}
	return m, nil
}

// withTTL is a verified advert as received at now with the message's TTL,
// or an error if its times are wrong.
func withTTL(a Advert, ttl int, lim limits, now time.Time) (Advert, error) {
	a.TTL = ttl
	if err := checkTimes(a, lim.maxLifetime, now); err != nil {
		return Advert{}, err
	}
	return a, nil
}

// openEnvelope verifies a signed envelope and returns its advert, whose
// Submitter is the signer.
func openEnvelope(data []byte) (Advert, error) {
	if len(data) == 0 {
		return Advert{}, fmt.Errorf("%w: unsigned", ErrBadSignature)
	}
	var rec advertRecord
	env, err := record.ConsumeTypedEnvelope(data, &rec)
	switch {
	case env == nil || errors.Is(err, errRecord):
		return Advert{}, fmt.Errorf("%w: %w", ErrGarbage, err)
	case err != nil:
		return Advert{}, fmt.Errorf("%w: %w", ErrBadSignature, err)
	case string(env.PayloadType) != string(advertCodec):
		return Advert{}, fmt.Errorf("%w: payload type %q", ErrGarbage, env.PayloadType)
	}
	a, err := rec.advert()
	if err != nil {
		return Advert{}, err
	}
	signer, err := peer.IDFromPublicKey(env.PublicKey)
	if err != nil || signer != a.Submitter {
		return Advert{}, fmt.Errorf("%w: signed by %s for submitter %s", ErrBadSignature, signer, a.Submitter)
	}
	a.env = data
	return a, nil
}

// advert checks the record's fields and converts them.
func (r *advertRecord) advert() (Advert, error) {
	if r.Job == "" || len(r.Job) > MaxJobLen {
		return Advert{}, fmt.Errorf("%w: job ID of %d bytes", ErrGarbage, len(r.Job))
	}
	sub, err := peer.Decode(r.Submitter)
	if err != nil {
		return Advert{}, fmt.Errorf("%w: submitter: %w", ErrGarbage, err)
	}
	if len(r.Addrs) > MaxAddrs {
		return Advert{}, fmt.Errorf("%w: %d addresses, limit %d", ErrGarbage, len(r.Addrs), MaxAddrs)
	}
	addrs := make([]ma.Multiaddr, 0, len(r.Addrs))
	for _, s := range r.Addrs {
		m, err := ma.NewMultiaddr(s)
		if err != nil {
			return Advert{}, fmt.Errorf("%w: address %q: %w", ErrGarbage, s, err)
		}
		addrs = append(addrs, m)
	}
	return Advert{
		Job: r.Job, Submitter: sub, Addrs: addrs, Body: r.Body,
		Issued: time.Unix(0, r.Issued), Expires: time.Unix(0, r.Expires),
	}, nil
}

// checkTimes refuses an advert that is expired, or that claims to live
// longer than maxLifetime from now.
func checkTimes(a Advert, maxLifetime time.Duration, now time.Time) error {
	switch {
	case !a.Expires.After(a.Issued):
		return fmt.Errorf("%w: expires %v not after issued %v", ErrGarbage, a.Expires, a.Issued)
	case !now.Before(a.Expires):
		return fmt.Errorf("%w: at %v", ErrExpired, a.Expires)
	case a.Expires.Sub(now) > maxLifetime:
		return fmt.Errorf("%w: expires %v, more than %v ahead", ErrGarbage, a.Expires, maxLifetime)
	}
	return nil
}

// seal signs a with key. a must already carry its Submitter (the key's
// peer), Issued and Expires.
func seal(a Advert, key crypto.PrivKey) ([]byte, error) {
	rec := &advertRecord{
		Job: a.Job, Submitter: a.Submitter.String(), Body: a.Body,
		Issued: a.Issued.UnixNano(), Expires: a.Expires.UnixNano(),
	}
	for _, m := range a.Addrs {
		rec.Addrs = append(rec.Addrs, m.String())
	}
	env, err := record.Seal(rec, key)
	if err != nil {
		return nil, fmt.Errorf("flood: sign advert %s: %w", a.Job, err)
	}
	b, err := env.Marshal()
	if err != nil {
		return nil, fmt.Errorf("flood: encode advert %s: %w", a.Job, err)
	}
	return b, nil
}

// prepare fills what Flood fills (Submitter, Addrs, times), checks the
// fields a local caller gave, and signs. self and addrs are the local
// peer's; key is its private key.
func prepare(a Advert, self peer.ID, addrs []ma.Multiaddr, key crypto.PrivKey, c Config) (Advert, error) {
	a, err := fill(a, self, addrs, c)
	if err != nil {
		return a, err
	}
	env, err := seal(a, key)
	if err != nil {
		return a, err
	}
	msg, err := encodeMessage(env, c.MaxTTL)
	if err != nil {
		return a, err
	}
	if len(msg) > c.MaxAdvertSize {
		return a, fmt.Errorf("%w: advert %s is %d bytes, limit %d", ErrOversized, a.Job, len(msg), c.MaxAdvertSize)
	}
	a.env = env
	return a, nil
}

// fill sets the defaults of a local advert and checks it.
func fill(a Advert, self peer.ID, addrs []ma.Multiaddr, c Config) (Advert, error) {
	if a.Submitter == "" {
		a.Submitter = self
	}
	if a.Submitter != self {
		return a, fmt.Errorf("flood: advert %s: submitter %s is not this peer %s", a.Job, a.Submitter, self)
	}
	if a.Job == "" || len(a.Job) > MaxJobLen {
		return a, fmt.Errorf("flood: job ID of %d bytes outside 1..%d", len(a.Job), MaxJobLen)
	}
	if a.Addrs == nil {
		a.Addrs = addrs[:min(len(addrs), MaxAddrs)]
	}
	if len(a.Addrs) > MaxAddrs {
		return a, fmt.Errorf("flood: advert %s: %d addresses, limit %d", a.Job, len(a.Addrs), MaxAddrs)
	}
	now := c.Clock.Now()
	if a.Issued.IsZero() {
		a.Issued = now
	}
	if a.Expires.IsZero() {
		a.Expires = now.Add(c.AdvertLifetime)
	}
	if err := checkTimes(a, c.MaxLifetime, now); err != nil {
		return a, fmt.Errorf("flood: advert %s: %w", a.Job, err)
	}
	return a, nil
}

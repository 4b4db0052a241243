package flood

// verifiedSize bounds the envelopes a Flooder remembers having verified.
// Every copy of one radius of one job carries the same envelope, and a
// radius's copies all arrive within a second or so; 64 covers that many
// jobs' radii flooding at once, at about 2 KiB each.
const verifiedSize = 64

// verifiedCache remembers the adverts of the envelopes whose signature
// has been checked, so that the other copies of a flood (one from every
// neighbour that forwards it, each radius) are not verified again: the
// same bytes always verify the same way. Traced on the Grid'5000
// simulation, an Ed25519 check was two thirds of an advert's CPU, and an
// agent gets each envelope from up to a dozen neighbours. Entries leave
// in the order they came. Not safe for concurrent use: the Flooder's run
// loop owns it.
type verifiedCache struct {
	verify  func(env []byte) (Advert, error) // openEnvelope; tests count the calls
	adverts map[string]Advert                // by envelope bytes
	order   []string                         // ring of the keys, oldest at next
	next    int
}

func newVerifiedCache(size int) *verifiedCache {
	return &verifiedCache{verify: openEnvelope, adverts: make(map[string]Advert, size), order: make([]string, 0, size)}
}

// open returns the advert of a signed envelope, verifying it only if its
// bytes are new. Its TTL is left zero: the message carries that.
func (c *verifiedCache) open(env []byte) (Advert, error) {
	if a, ok := c.adverts[string(env)]; ok {
		return a, nil
	}
	a, err := c.verify(env)
	if err != nil {
		return Advert{}, err
	}
	key := string(env)
	if len(c.order) < cap(c.order) {
		c.order = append(c.order, key)
	} else {
		delete(c.adverts, c.order[c.next])
		c.order[c.next] = key
		c.next = (c.next + 1) % len(c.order)
	}
	c.adverts[key] = a
	return a, nil
}

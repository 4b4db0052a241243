package blob

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// ErrBadHash is returned for text that is not a sha256 in lowercase hex.
var ErrBadHash = errors.New("blob: bad hash")

// Hash is the sha256 of a blob's content, its name in a Store.
type Hash [sha256.Size]byte

// Sum returns the Hash of b.
func Sum(b []byte) Hash { return Hash(sha256.Sum256(b)) }

// String is the 64 lowercase hex digits of h.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// IsZero reports whether h is the zero value (no hash set).
func (h Hash) IsZero() bool { return h == Hash{} }

// ParseHash parses the 64 lowercase hex digits String returns. Anything else
// (another length, upper case, a prefix such as "sha256:") is refused, so a
// Hash has exactly one text form and one file name.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*len(h) {
		return h, fmt.Errorf("%w: %d characters, want %d", ErrBadHash, len(s), 2*len(h))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return h, fmt.Errorf("%w: character %q at %d is not lowercase hex", ErrBadHash, c, i)
		}
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return Hash{}, fmt.Errorf("%w: %v", ErrBadHash, err)
	}
	return h, nil
}

// MarshalText encodes h as String does, so a Hash is a JSON string.
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText parses text as ParseHash does.
func (h *Hash) UnmarshalText(text []byte) error {
	p, err := ParseHash(string(text))
	if err != nil {
		return err
	}
	*h = p
	return nil
}

package job

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
)

// MaxIDLen bounds a job ID; IDs name folders on every worker.
const MaxIDLen = 64

// NewID returns a fresh random job ID: 128 random bits in lower-case base32
// (26 characters), safe in URLs, file names and logs.
func NewID() ID {
	return ID(strings.ToLower(rand.Text()))
}

// ParseID checks a job ID that came from a user or a peer. An ID is 1 to 64
// characters of letters, digits, '.', '_' and '-', starting with a letter or
// digit, so it can never climb out of a folder ("..", "/") or pass for a
// flag.
func ParseID(s string) (ID, error) {
	if len(s) == 0 || len(s) > MaxIDLen {
		return "", fmt.Errorf("job id: length must be 1..%d, got %d", MaxIDLen, len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if alnum || i > 0 && (c == '.' || c == '_' || c == '-') {
			continue
		}
		return "", fmt.Errorf("job id %q: character %q at %d not allowed", s, c, i)
	}
	return ID(s), nil
}

// String returns the ID as text.
func (id ID) String() string { return string(id) }

// Key is a job's secret, made by the submitter and quoted in every commit and
// control message so that workers start and stop only what the submitter
// asked for. Printing a Key with %s or %v shows a redacted form; use
// string(k) where the secret itself is meant.
type Key string

// keyBytes is the entropy of a key: 256 bits.
const keyBytes = 32

// NewKey returns a fresh random job key (43 characters of URL-safe base64).
func NewKey() Key {
	b := make([]byte, keyBytes)
	_, _ = rand.Read(b) // never fails: crypto/rand crashes the program instead
	return Key(base64.RawURLEncoding.EncodeToString(b))
}

// ParseKey checks a key received from a peer or read from disk.
func ParseKey(s string) (Key, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != keyBytes {
		return "", fmt.Errorf("job key: want %d bytes of unpadded URL-safe base64", keyBytes)
	}
	return Key(s), nil
}

// String redacts the key so that it does not end up in logs.
func (k Key) String() string {
	if k == "" {
		return "key()"
	}
	return "key(…)"
}

// GoString redacts the key under %#v too.
func (k Key) GoString() string { return k.String() }

// Equal compares two keys in constant time. An empty key equals nothing.
func (k Key) Equal(o Key) bool {
	return k != "" && subtle.ConstantTimeCompare([]byte(k), []byte(o)) == 1
}

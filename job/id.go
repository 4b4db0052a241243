package job

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// ID names a job across the whole network: the job ID as it travels
// (proto.JobID), under the name the rest of the submitter's side uses.
type ID = proto.JobID

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

package proto

import (
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
)

// JobID names a job across the whole network. It is chosen by the
// submitter.
type JobID string

// MaxIDLen bounds a job ID; IDs name folders on every worker.
const MaxIDLen = 64

// NewJobID returns a fresh random job ID: 128 random bits in lower-case
// base32 (26 characters), safe in URLs, file names and logs.
func NewJobID() JobID {
	return JobID(strings.ToLower(rand.Text()))
}

// ParseJobID checks a job ID that came from a user or a peer. An ID is 1
// to 64 characters of letters, digits, '.', '_' and '-', starting with a
// letter or digit, so it can never climb out of a folder ("..", "/") or
// pass for a flag.
func ParseJobID(s string) (JobID, error) {
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
	return JobID(s), nil
}

// String returns the ID as text.
func (id JobID) String() string { return string(id) }

// FloodKey is the key of a job's match-th flood (Advert.Job, which the flood
// de-duplicates on): the job ID for the first match, "<id>.<match>" for the
// later ones. A peer delivers a job's advert only when it comes with a
// larger radius than any before, so a job matched again under its first
// key would never reach the peers its first flood reached.
func FloodKey(id JobID, match int) string {
	if match <= 1 {
		return string(id)
	}
	return string(id) + "." + strconv.Itoa(match)
}

// IsFloodKeyOf reports whether key is a FloodKey of job id.
func IsFloodKeyOf(key string, id JobID) bool {
	if key == string(id) {
		return true
	}
	n, ok := strings.CutPrefix(key, string(id)+".")
	if !ok {
		return false
	}
	m, err := strconv.Atoi(n)
	return err == nil && m > 1 && strconv.Itoa(m) == n
}

package job

import (
	"strconv"
	"strings"
)

// FloodKey is the key of a job's match-th flood (Advert.Job, which the flood
// de-duplicates on): the job ID for the first match, "<id>.<match>" for the
// later ones. A peer delivers a job's advert only when it comes with a
// larger radius than any before, so a job matched again under its first
// key would never reach the peers its first flood reached.
func FloodKey(id ID, match int) string {
	if match <= 1 {
		return string(id)
	}
	return string(id) + "." + strconv.Itoa(match)
}

// IsFloodKeyOf reports whether key is a FloodKey of job id.
func IsFloodKeyOf(key string, id ID) bool {
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

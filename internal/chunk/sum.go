package chunk

import (
	"crypto/sha256"
	"hash"
)

func newSum() hash.Hash { return sha256.New() }

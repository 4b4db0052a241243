package pmi

import (
	"errors"
	"fmt"
	"strings"
)

// Limits of the wire protocol. They are what the server announces in
// get_maxes (MPICH's own client never sends longer) and what Parse
// enforces on every request.
const (
	MaxLine      = 4096 // one request line, newline excluded
	MaxKVSName   = 256
	MaxKey       = 64
	MaxValue     = 1024
	MaxKeysRank  = 1024      // keys one rank may put in all
	MaxBytesRank = 256 << 10 // bytes of keys and values one rank may put in all
	maxFields    = 8
)

// ErrProtocol marks a request that breaks the protocol.
var ErrProtocol = errors.New("pmi: protocol error")

// Request is one decoded request line: its command and its other fields.
type Request struct {
	Cmd    string
	Fields map[string]string
}

// Parse decodes one PMI-1 request line (without its newline):
// space-separated key=value fields, the first of them cmd=. A value runs
// to the next space; MPICH encodes its values without spaces.
func Parse(line string) (Request, error) {
	if len(line) > MaxLine {
		return Request{}, fmt.Errorf("%w: line of %d bytes, at most %d", ErrProtocol, len(line), MaxLine)
	}
	if looksPMI2(line) {
		return Request{}, fmt.Errorf("%w: a PMI-2 request; this agent speaks PMI-1 (set PMI_VERSION? rebuild with MPICH's default simple PMI)", ErrProtocol)
	}
	toks := strings.Fields(line)
	if len(toks) == 0 {
		return Request{}, fmt.Errorf("%w: empty request", ErrProtocol)
	}
	if len(toks) > maxFields {
		return Request{}, fmt.Errorf("%w: %d fields, at most %d", ErrProtocol, len(toks), maxFields)
	}
	r := Request{Fields: make(map[string]string, len(toks)-1)}
	for i, t := range toks {
		k, v, ok := strings.Cut(t, "=")
		if !ok || k == "" {
			return Request{}, fmt.Errorf("%w: field %q is not key=value", ErrProtocol, clip(t))
		}
		if i == 0 {
			if k != "cmd" || v == "" {
				return Request{}, fmt.Errorf("%w: request does not start with cmd=", ErrProtocol)
			}
			r.Cmd = v
			continue
		}
		if _, dup := r.Fields[k]; dup {
			return Request{}, fmt.Errorf("%w: field %q twice", ErrProtocol, clip(k))
		}
		r.Fields[k] = v
	}
	return r, r.check()
}

// looksPMI2 reports a PMI-2 frame: a 6-character length (digits, padded
// with spaces), then cmd=...;
func looksPMI2(line string) bool {
	if len(line) < 10 || !strings.HasPrefix(line[6:], "cmd=") {
		return false
	}
	digits := strings.TrimLeft(line[:6], " ")
	if digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// check enforces the size limits of the fields a command uses.
func (r Request) check() error {
	if len(r.Fields["kvsname"]) > MaxKVSName {
		return fmt.Errorf("%w: kvsname of %d bytes, at most %d", ErrProtocol, len(r.Fields["kvsname"]), MaxKVSName)
	}
	switch r.Cmd {
	case "put", "get":
		k, ok := r.Fields["key"]
		if !ok || k == "" || len(k) > MaxKey {
			return fmt.Errorf("%w: %s needs a key of 1 to %d bytes", ErrProtocol, r.Cmd, MaxKey)
		}
	}
	if r.Cmd == "put" {
		v, ok := r.Fields["value"]
		if !ok || len(v) > MaxValue {
			return fmt.Errorf("%w: put needs a value of at most %d bytes", ErrProtocol, MaxValue)
		}
	}
	return nil
}

// Reply formats a response line (with its newline) from alternating
// keys and values, "cmd" first.
func Reply(kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(kv[i])
		b.WriteByte('=')
		b.WriteString(kv[i+1])
	}
	b.WriteByte('\n')
	return b.String()
}

// clip shortens what an error quotes from the wire.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

package worker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Bounds on an allow or deny file.
const (
	MaxPeerListEntries = 100000
	maxPeerListLine    = 1024 // a peer ID is ~52 characters; room for a comment
)

// LoadPeerList reads an allow or deny file (--allow FILE, --deny FILE): one
// peer ID per line; '#' starts a comment; blank lines are ignored. An empty
// file gives an empty, non-nil set (as an allow list: nobody). Errors name
// the file and the line.
func LoadPeerList(path string) (map[peer.ID]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("peer list: %w", err)
	}
	defer f.Close()
	ids, err := ParsePeerList(f)
	if err != nil {
		return nil, fmt.Errorf("peer list %s: %w", path, err)
	}
	return ids, nil
}

// ParsePeerList reads the peer list format of LoadPeerList.
func ParsePeerList(r io.Reader) (map[peer.ID]bool, error) {
	ids := map[peer.ID]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256), maxPeerListLine)
	line := 0
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		id, err := peer.Decode(text)
		if err != nil {
			return nil, fmt.Errorf("line %d: %q is not a peer ID: %w", line, text, err)
		}
		if len(ids) >= MaxPeerListEntries {
			return nil, fmt.Errorf("line %d: more than %d peers", line, MaxPeerListEntries)
		}
		ids[id] = true
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: longer than %d bytes", line+1, maxPeerListLine)
		}
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	return ids, nil
}

// EditPeerList returns a peer list file's content with id added (at the
// end, when absent) or removed (every line naming it), keeping comments and
// the other lines as the owner wrote them. The result is parsed before it
// is returned, so an edit never produces a file LoadPeerList refuses; an
// unchanged list reports changed false.
func EditPeerList(content []byte, id peer.ID, add bool) (out []byte, changed bool, err error) {
	ids, err := ParsePeerList(bytes.NewReader(content))
	if err != nil {
		return nil, false, err
	}
	if ids[id] == add {
		return content, false, nil
	}
	if add {
		out = append([]byte{}, content...)
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		out = append(out, id.String()+"\n"...)
	} else {
		for _, line := range strings.SplitAfter(string(content), "\n") {
			text, _, _ := strings.Cut(line, "#")
			if strings.TrimSpace(text) == id.String() {
				continue
			}
			out = append(out, line...)
		}
	}
	if _, err := ParsePeerList(bytes.NewReader(out)); err != nil {
		return nil, false, err
	}
	return out, true, nil
}

package proc

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// readLines reads r to its end, giving each line (without its newline) to
// emit. A line longer than max bytes is given in pieces of max bytes. It
// returns nil at EOF, or the read error that stopped it.
func readLines(r io.Reader, max int, emit func([]byte)) error {
	br := bufio.NewReaderSize(r, max)
	split := false // the previous piece filled the buffer without a newline
	for {
		b, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			// A newline right after a full piece ends that piece; it is
			// not an empty line of its own.
			if line := b[:len(b)-1]; len(line) > 0 || !split {
				emit(line)
			}
			split = false
		case errors.Is(err, bufio.ErrBufferFull):
			emit(b)
			split = true
		default:
			if len(b) > 0 {
				emit(b)
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// sink hands lines to an OutputFunc and keeps the tail. Its mutex is held
// while the OutputFunc runs, which is what keeps calls from overlapping.
type sink struct {
	mu   sync.Mutex
	out  OutputFunc
	tail tail
}

func newSink(out OutputFunc, maxLines, maxBytes int) *sink {
	return &sink{out: out, tail: tail{maxLines: maxLines, maxBytes: maxBytes}}
}

// emitter returns the emit function of one stream.
func (s *sink) emitter(stream string) func([]byte) {
	return func(b []byte) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.tail.add(Line{Stream: stream, Text: string(b)})
		if s.out != nil {
			s.out(stream, bytes.Clone(b))
		}
	}
}

// lines returns a copy of the tail, oldest first.
func (s *sink) lines() []Line {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tail.slice()
}

// tail is a ring of the last lines, bounded in count and in bytes.
type tail struct {
	maxLines, maxBytes int
	ring               []Line
	head, n, bytes     int
}

func (t *tail) add(l Line) {
	if t.ring == nil {
		t.ring = make([]Line, t.maxLines)
	}
	if len(l.Text) > t.maxBytes {
		l.Text = l.Text[len(l.Text)-t.maxBytes:]
	}
	for t.n == t.maxLines || (t.n > 0 && t.bytes+len(l.Text) > t.maxBytes) {
		t.bytes -= len(t.ring[t.head].Text)
		t.ring[t.head] = Line{}
		t.head = (t.head + 1) % t.maxLines
		t.n--
	}
	t.ring[(t.head+t.n)%t.maxLines] = l
	t.n++
	t.bytes += len(l.Text)
}

func (t *tail) slice() []Line {
	out := make([]Line, t.n)
	for i := range out {
		out[i] = t.ring[(t.head+i)%t.maxLines]
	}
	return out
}

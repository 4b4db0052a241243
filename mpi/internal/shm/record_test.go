package shm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync/atomic"
	"testing"
)

var errEmpty = errors.New("empty")

func empty() error { return errEmpty }

// TestRingCorrupt: control words and tails a peer scribbled are refused,
// never followed.
func TestRingCorrupt(t *testing.T) {
	quarter := uint64(MinCap/4 - 8)
	for _, tc := range []struct {
		name  string
		ctrl  uint64 // the first record's control word (the reader notices)
		tail  uint64 // the tail, once the writer wrote two records, the reader read one and the writer saw it (the writer notices)
		reads bool
	}{
		{name: "record longer than a quarter ring", ctrl: quarter + 1, reads: true},
		{name: "record of another lap", ctrl: ctrlWord(MinCap, 5), reads: true},
		{name: "record far away", ctrl: 1<<62 | 5, reads: true},
		{name: "tail ahead of the writer", tail: 4 * MinCap},
		{name: "tail off a line", tail: 2*line + 5},
		{name: "tail moved back", tail: line},
		{name: "tail wrapped below", tail: ^uint64(0) &^ (line - 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, r := pair(t, MinCap)
			if tc.reads {
				atomic.StoreUint64(w.ctrl(0), tc.ctrl)
				if _, err := r.Read(make([]byte, 10), never); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("read: got %v, want ErrCorrupt", err)
				}
				return
			}
			for range 2 { // two records of two lines
				if err := w.Write(make([]byte, 100), never); err != nil {
					t.Fatal(err)
				}
			}
			if err := readFull(r, make([]byte, 100)); err != nil {
				t.Fatal(err)
			}
			if err := w.loadTail(); err != nil || w.seen != 2*line {
				t.Fatalf("tail %d, %v", w.seen, err)
			}
			binary.LittleEndian.PutUint64(w.mem[offTail:], tc.tail)
			// The writer looks at the tail once its room runs short.
			if err := w.Write(make([]byte, MinCap), never); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("write: got %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestWriterCachesTail: while the room it last saw lasts, the writer does
// not read the tail (the line the reader writes at every record): frames
// written over a scribbled tail go through until the room runs out, and
// the next write finds the scribble.
func TestWriterCachesTail(t *testing.T) {
	w, r := pair(t, MinCap)
	binary.LittleEndian.PutUint64(w.mem[offTail:], 12345)
	frame := bytes.Repeat([]byte("f"), line-8)
	fits := MinCap/line - 1 // one line stays free for the next control word
	for i := 0; i < fits; i++ {
		if err := w.WriteFrame(frame[:8], frame[8:], never); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	if err := w.WriteFrame(frame[:8], frame[8:], never); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("frame past the room: got %v, want ErrCorrupt", err)
	}
	got := make([]byte, len(frame))
	for i := 0; i < fits; i++ {
		if err := readFull(r, got); err != nil || !bytes.Equal(got, frame) {
			t.Fatalf("frame %d: %q, %v", i, got, err)
		}
	}
}

// TestNoStaleRecord: payloads made of words that are valid control words
// of the next lap's positions (an honest program may send any bytes) are
// never taken for records once the reader gets there: after each record
// read, the next one's control word reads zero until the writer writes it.
func TestNoStaleRecord(t *testing.T) {
	w, r := pair(t, MinCap)
	bait := make([]byte, w.maxRecord())
	var stream []byte
	for lap := uint64(0); lap < 4; lap++ {
		for i, size := 0, uint64(0); i < 40; i++ {
			// Sizes that move record starts over the last lap's payloads.
			size = 1 + (size*7+uint64(i)*61+lap*13)%w.maxRecord()
			for k := 0; k+8 <= int(size); k += 8 {
				at := (w.pos + 8 + uint64(k)) &^ (line - 1)
				binary.LittleEndian.PutUint64(bait[k:], ctrlWord(at+MinCap, 8))
			}
			if err := w.Write(bait[:size], never); err != nil {
				t.Fatal(err)
			}
			stream = append(stream, bait[:size]...)
			got := make([]byte, size)
			if err := readFull(r, got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, stream[len(stream)-int(size):]) {
				t.Fatalf("lap %d record %d differs", lap, i)
			}
			if c := atomic.LoadUint64(r.ctrl(r.next)); c != 0 || r.Pending() {
				t.Fatalf("lap %d record %d: the next control word holds %#x before it is written", lap, i, c)
			}
		}
	}
}

// FuzzRing: whatever a peer writes into the next record's control word and
// the data, and wherever the reader stands, a read returns bytes of one
// valid record or an error, and never panics or reads outside the ring.
func FuzzRing(f *testing.F) {
	f.Add(ctrlWord(0, 10), uint64(0), uint64(0), []byte("hello"))
	f.Add(ctrlWord(64, MinCap), uint64(64), uint64(0), []byte{})
	f.Add(^uint64(0), uint64(1), uint64(3), []byte{1})
	f.Add(uint64(0), uint64(MinCap-line), uint64(7), []byte{1})
	w, r := pair(f, MinCap)
	f.Fuzz(func(t *testing.T, ctrl, next, rem uint64, data []byte) {
		r.next, r.rem, r.at = next&^(line-1), rem%(r.maxRecord()+1), next+8
		copy(w.data, data)
		atomic.StoreUint64(w.ctrl(r.next), ctrl)
		if r.rem == 0 && ctrl == 0 {
			return // an empty ring: the wait, which TestRingWaitEnds covers
		}
		want := r.rem
		if want == 0 {
			want = ctrl & (1<<32 - 1)
			if uint32(ctrl>>32) != uint32(r.next/line) || want == 0 || want > r.maxRecord() {
				want = 0 // must be refused
			}
		}
		n, err := r.Read(make([]byte, 100), empty)
		switch {
		case err == nil && (n <= 0 || uint64(n) > min(100, want)):
			t.Fatalf("read %d bytes of a record of %d (control %#x at %d)", n, want, ctrl, r.next)
		case err != nil && (want != 0 || !errors.Is(err, ErrCorrupt)):
			t.Fatalf("control %#x at %d, %d left: %v", ctrl, r.next, rem, err)
		}
	})
}

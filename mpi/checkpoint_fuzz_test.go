package mpi

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadCheckpoint feeds arbitrary bytes to the checkpoint file decoder:
// it must not panic, nor allocate past what the file holds, and what a
// written file holds must read back.
func FuzzReadCheckpoint(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "c")
	msgs := []savedMsg{{Src: 1, Ctx: 0, Tag: 3, Data: []byte("hello")}, {Src: 0, Ctx: 5, Tag: 0}}
	if _, err := writeCheckpoint(path, fileHeader{Num: 2, Rank: 0, Size: 2}, msgs, func(w io.Writer) error {
		_, err := w.Write([]byte("state"))
		return err
	}); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add(good[:fileHeaderLen+5])
	f.Add([]byte("ZCKPT"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, ms, st, err := readCheckpoint(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		n := fileHeaderLen
		for _, m := range ms {
			n += savedMsgHeadLen + len(m.Data)
			if m.Src >= h.Size {
				t.Fatalf("message from rank %d of %d", m.Src, h.Size)
			}
		}
		if int64(n)+st.Size() != int64(len(data)) {
			t.Fatalf("%d bytes of header and messages, %d of state, file of %d", n, st.Size(), len(data))
		}
		if bytes.Equal(data, good) {
			b, _ := io.ReadAll(st)
			if h.Num != 2 || len(ms) != 2 || string(ms[0].Data) != "hello" || string(b) != "state" {
				t.Fatalf("read back %+v %+v %q", h, ms, b)
			}
		}
	})
}

package worker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/peertest"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

func TestParsePeerList(t *testing.T) {
	ids := peertest.Peers(t, 3)
	text := "# lab machines\n" + ids[0].String() + "\n\n   " + ids[1].String() + "   # bob's desktop\n" +
		ids[0].String() + "\n" + ids[2].String()
	got, err := ParsePeerList(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !got[ids[0]] || !got[ids[1]] || !got[ids[2]] {
		t.Fatalf("got %v", got)
	}
	empty, err := ParsePeerList(strings.NewReader("# nobody\n\n"))
	if err != nil || empty == nil || len(empty) != 0 {
		t.Fatalf("empty list = %v, %v; want an empty non-nil set", empty, err)
	}
}

func TestParsePeerListErrorsNameTheLine(t *testing.T) {
	ids := peertest.Peers(t, 1)
	tests := map[string]string{
		ids[0].String() + "\nnot-a-peer\n":             "line 2:",
		"\n\n" + ids[0].String() + " extra\n":          "line 3:",
		strings.Repeat("x", maxPeerListLine+10) + "\n": "line 1: longer than",
	}
	for in, want := range tests {
		_, err := ParsePeerList(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
}

func TestLoadPeerList(t *testing.T) {
	ids := peertest.Peers(t, 2)
	dir := t.TempDir()
	path := filepath.Join(dir, "deny")
	if err := os.WriteFile(path, []byte(ids[0].String()+"\n"+ids[1].String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	deny, err := LoadPeerList(path)
	if err != nil || len(deny) != 2 {
		t.Fatalf("LoadPeerList = %v, %v", deny, err)
	}
	if _, err := LoadPeerList(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing file accepted")
	}
	if err := os.WriteFile(path, []byte("junk\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPeerList(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("error %v should name the file and line", err)
	}
	// End to end with the policy: a denied submitter gets no offer.
	p := host()
	p.Deny = deny
	if d := Decide(p, Usage{}, ids[1], need(1, proto.Requirements{})); d.Accept {
		t.Fatal("denied submitter accepted")
	}
}

func FuzzParsePeerList(f *testing.F) {
	ids := peertest.Peers(f, 2)
	f.Add(ids[0].String() + "\n# c\n" + ids[1].String())
	f.Add("junk\n")
	f.Add("#\n\n\r\n")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParsePeerList(strings.NewReader(s))
		if err != nil {
			return
		}
		for id := range got {
			if err := id.Validate(); err != nil {
				t.Fatalf("accepted invalid peer ID %q", id)
			}
		}
	})
}

func TestEditPeerList(t *testing.T) {
	ids := peertest.Peers(t, 3)
	a, b, c := ids[0].String(), ids[1].String(), ids[2].String()
	tests := []struct {
		name    string
		in      string
		id      peer.ID
		add     bool
		want    string
		changed bool
		err     string
	}{
		{name: "add to empty", in: "", id: ids[0], add: true, want: a + "\n", changed: true},
		{name: "add keeps comments", in: "# lab\n" + b + " # bob\n", id: ids[0], add: true, want: "# lab\n" + b + " # bob\n" + a + "\n", changed: true},
		{name: "add after a last line without newline", in: b, id: ids[0], add: true, want: b + "\n" + a + "\n", changed: true},
		{name: "add present", in: a + "\n", id: ids[0], add: true, want: a + "\n"},
		{name: "remove", in: "# lab\n" + a + "\n" + b + "\n", id: ids[0], want: "# lab\n" + b + "\n", changed: true},
		{name: "remove every line naming it", in: a + "\n" + c + "\n  " + a + " # again\n", id: ids[0], want: c + "\n", changed: true},
		{name: "remove absent", in: b + "\n", id: ids[0], want: b + "\n"},
		{name: "a broken file is not edited", in: "nonsense\n", id: ids[0], add: true, err: "line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, changed, err := EditPeerList([]byte(tt.in), tt.id, tt.add)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || string(out) != tt.want || changed != tt.changed {
				t.Fatalf("got %q, %v, %v; want %q, %v", out, changed, err, tt.want, tt.changed)
			}
			got, err := ParsePeerList(strings.NewReader(string(out)))
			if err != nil || got[tt.id] != tt.add {
				t.Fatalf("the edited list parses to %v, %v", got, err)
			}
		})
	}
}

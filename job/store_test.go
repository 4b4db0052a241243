package job

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/multiformats/go-multiaddr"

	"github.com/zorilla-p2p/zorilla/internal/peertest"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

func sampleRecord(t testing.TB) Record {
	ids := peertest.Peers(t, 3)
	rl := []Offer{
		{Peer: ids[0], Lease: "l0", Slots: 2, Cores: 2, Memory: 1 << 30, RTT: time.Millisecond,
			Addrs: []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/4001")}},
		{Peer: ids[1], Lease: "l1", Slots: 2, RTT: 2 * time.Millisecond},
		{Peer: ids[2], Lease: "l2", Slots: 2, RTT: 3 * time.Millisecond},
	}
	p, err := Place(Concentrate, rl, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	r := NewRecord(proto.NewJobID(), NewKey(), wantJob(), t0)
	r, _ = Transition(r, Reserving, t0.Add(time.Second), "")
	r, _ = Transition(r, Starting, t0.Add(2*time.Second), "")
	r.Plan = &p
	return r
}

func TestStoreRoundTrip(t *testing.T) {
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := sampleRecord(t)
	if err := s.Put(r); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip changed the record:\n%+v\n%+v", got, r)
	}
	// Replace it; no temporary file is left behind.
	r2, _ := Transition(r, Running, r.Updated.Add(time.Second), "")
	if err := s.Put(r2); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(r.ID); got.State != Running {
		t.Fatalf("state %s after replace", got.State)
	}
	entries, _ := os.ReadDir(s.Dir(r.ID))
	if len(entries) != 1 {
		t.Fatalf("job folder holds %d files, want only the record", len(entries))
	}
	if _, err := s.Get(proto.NewJobID()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing job: %v", err)
	}
	if _, err := s.Get("../x"); err == nil {
		t.Fatal("Get accepted a bad ID")
	}
	if err := s.Delete(r.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir(r.ID)); !os.IsNotExist(err) {
		t.Fatalf("folder still there: %v", err)
	}
}

func TestStorePutRefusesBadRecord(t *testing.T) {
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := sampleRecord(t)
	r.Desc.Nodes = 0
	if err := s.Put(r); err == nil || !strings.Contains(err.Error(), "nodes") {
		t.Fatalf("Put of a bad record: %v", err)
	}
	if recs, _ := s.List(); len(recs) != 0 {
		t.Fatal("a refused record was stored")
	}
}

func TestStoreListReportsBadRecords(t *testing.T) {
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, b := sampleRecord(t), sampleRecord(t)
	b.Created = a.Created.Add(time.Hour)
	for _, r := range []Record{b, a} {
		if err := s.Put(r); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{"garbage": "{not json", "wrongid": "", "nofile": "-"} {
		dir := filepath.Join(s.dir, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if name == "wrongid" {
			body = strings.Replace(mustRead(t, filepath.Join(s.Dir(a.ID), recordFile)), string(a.ID), "other", 1)
		}
		if body != "-" {
			if err := os.WriteFile(filepath.Join(dir, recordFile), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	recs, problems := s.List()
	if len(recs) != 2 || recs[0].ID != a.ID || recs[1].ID != b.ID {
		t.Fatalf("List gave %d records, want a then b", len(recs))
	}
	if len(problems) != 3 {
		t.Fatalf("problems %v, want 3", problems)
	}
	for _, p := range problems {
		if !strings.Contains(p.Error(), "job folder ") {
			t.Errorf("problem %q does not name the folder", p)
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

package pmi

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	long := strings.Repeat("x", MaxValue+1)
	cases := []struct {
		line string
		cmd  string
		bad  bool
	}{
		{"cmd=init pmi_version=1 pmi_subversion=1", "init", false},
		{"cmd=put kvsname=k key=a value=b=c", "put", false},
		{"cmd=put kvsname=k key=a value=", "put", false},
		{"cmd=barrier_in", "barrier_in", false},
		{"", "", true},
		{"   ", "", true},
		{"garbage", "", true},
		{"key=a cmd=put", "", true},
		{"cmd=", "", true},
		{"cmd=put kvsname=k key=a", "", true},
		{"cmd=put kvsname=k value=v", "", true},
		{"cmd=put kvsname=k key=" + strings.Repeat("k", MaxKey+1) + " value=v", "", true},
		{"cmd=put kvsname=k key=a value=" + long, "", true},
		{"cmd=get kvsname=k key=a key=b", "", true},
		{"cmd=get kvsname=" + strings.Repeat("n", MaxKVSName+1) + " key=a", "", true},
		{"cmd=get kvsname=k =x key=a", "", true},
		{"    26cmd=fullinit;pmirank=0;", "", true},
		{strings.Repeat("cmd=x ", MaxLine), "", true},
	}
	for _, c := range cases {
		r, err := Parse(c.line)
		if c.bad != (err != nil) {
			t.Errorf("Parse(%.50q): err %v, want bad=%v", c.line, err, c.bad)
			continue
		}
		if err != nil && !errors.Is(err, ErrProtocol) {
			t.Errorf("Parse(%.50q): %v is not ErrProtocol", c.line, err)
		}
		if err == nil && r.Cmd != c.cmd {
			t.Errorf("Parse(%.50q): cmd %q, want %q", c.line, r.Cmd, c.cmd)
		}
	}
}

func TestProcessMapping(t *testing.T) {
	cases := []struct {
		hostOf []int
		want   string
	}{
		{[]int{0}, "(vector,(0,1,1))"},
		{[]int{0, 0, 0, 1, 1, 1}, "(vector,(0,1,3),(1,1,3))"},
		{[]int{0, 1, 0, 1}, "(vector,(0,1,1),(1,1,1),(0,1,1),(1,1,1))"},
	}
	for _, c := range cases {
		if got := ProcessMapping(c.hostOf); got != c.want {
			t.Errorf("ProcessMapping(%v) = %s, want %s", c.hostOf, got, c.want)
		}
	}
}

// memJob is a one-rank job: its own KVS, barriers that return at once.
type memJob struct{ kvs map[string]string }

func (m *memJob) Put(_ int, k, v string) error       { m.kvs[k] = v; return nil }
func (m *memJob) Get(k string) (string, bool)        { v, ok := m.kvs[k]; return v, ok }
func (m *memJob) Barrier(context.Context, int) error { return nil }
func (m *memJob) Abort(int, int, string)             {}

// TestServeTranscript plays requests, good and bad, against Serve and
// checks each answer.
func TestServeTranscript(t *testing.T) {
	steps := []struct{ req, want string }{
		{"cmd=init pmi_version=1 pmi_subversion=1", "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0"},
		{"cmd=get_maxes", "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024 rc=0"},
		{"cmd=get_my_kvsname", "cmd=my_kvsname kvsname=kvs_1 rc=0"},
		{"cmd=put kvsname=kvs_1 key=a value=1", "cmd=put_result rc=0 msg=success"},
		{"cmd=put kvsname=other key=a value=1", "cmd=put_result rc=-1 msg=unknown_kvsname_other"},
		{"cmd=put kvsname=kvs_1 key=PMI_process_mapping value=1", "cmd=put_result rc=-1 msg=key_reserved"},
		{"cmd=barrier_in", "cmd=barrier_out rc=0"},
		{"cmd=get kvsname=kvs_1 key=a", "cmd=get_result rc=0 msg=success value=1"},
		{"cmd=get kvsname=kvs_1 key=missing", "cmd=get_result rc=-1 msg=key_missing_not_found"},
		{"cmd=get kvsname=kvs_1 key=PMI_process_mapping", "cmd=get_result rc=0 msg=success value=(vector,(0,1,1))"},
		{"cmd=finalize", "cmd=finalize_ack rc=0"},
		{"cmd=spawn nprocs=2", "cmd=error rc=-1 msg=pmi:_protocol_error:_command_\"spawn\"_is_not_supported_by_this_agent"},
	}
	ours, theirs := net.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := Serve(context.Background(), ours, Info{Size: 1, KVSName: "kvs_1", Mapping: "(vector,(0,1,1))"}, &memJob{kvs: map[string]string{}})
		done <- err
	}()
	br := bufio.NewReader(theirs)
	for _, s := range steps {
		if _, err := theirs.Write([]byte(s.req + "\n")); err != nil {
			t.Fatal(err)
		}
		got, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("%s: %v", s.req, err)
		}
		if strings.TrimSpace(got) != s.want {
			t.Errorf("%s:\n got %s want %s", s.req, strings.TrimSpace(got), s.want)
		}
	}
	if err := <-done; !errors.Is(err, ErrProtocol) {
		t.Fatalf("Serve after an unsupported command: %v", err)
	}
}

// TestServeOversizedLine: a line past MaxLine is answered with an error
// and the connection closed, without reading it all into memory.
func TestServeOversizedLine(t *testing.T) {
	ours, theirs := net.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := Serve(context.Background(), ours, Info{Size: 1, KVSName: "k"}, &memJob{kvs: map[string]string{}})
		done <- err
	}()
	go func() { _, _ = theirs.Write([]byte(strings.Repeat("x", 3*MaxLine))) }()
	got, _ := bufio.NewReader(theirs).ReadString('\n')
	if !strings.HasPrefix(got, "cmd=error rc=-1") {
		t.Fatalf("answer %q", got)
	}
	if err := <-done; !errors.Is(err, ErrProtocol) {
		t.Fatalf("Serve: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"cmd=init pmi_version=1 pmi_subversion=1", "cmd=put kvsname=k key=a value=b",
		"cmd=get kvsname=k key=a", "cmd=barrier_in", "    26cmd=fullinit;", "=", "cmd=abort exitcode=3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		r, err := Parse(line)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v is not ErrProtocol", err)
			}
			return
		}
		if r.Cmd == "" || len(line) > MaxLine || len(r.Fields["key"]) > MaxKey || len(r.Fields["value"]) > MaxValue {
			t.Fatalf("accepted %q as %+v", line, r)
		}
	})
}

// FuzzServe feeds arbitrary bytes to a server: it must answer or close,
// never panic or hang.
func FuzzServe(f *testing.F) {
	f.Add([]byte("cmd=init pmi_version=1 pmi_subversion=1\ncmd=put kvsname=k key=a value=b\ncmd=get kvsname=k key=a\n"))
	f.Add([]byte("cmd=barrier_in\ncmd=finalize\n"))
	f.Add([]byte("\x00\xff\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		ours, theirs := net.Pipe()
		done := make(chan struct{})
		go func() {
			_, _ = Serve(context.Background(), ours, Info{Size: 1, KVSName: "k"}, &memJob{kvs: map[string]string{}})
			close(done)
		}()
		go func() { _, _ = theirs.Write(in); _ = theirs.Close() }()
		go func() { _, _ = bufio.NewReader(theirs).WriteTo(discard{}) }()
		<-done
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func FuzzFenceMsg(f *testing.F) {
	f.Add([]byte(`{"job":"j","key":"k","epoch":1,"from":2,"down":true,"kvs":{"a":"b"}}`))
	f.Add([]byte(`{"job":"j","epoch":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMsg(b)
		if err != nil {
			return
		}
		if m.Epoch < 0 || m.From < 0 {
			t.Fatalf("accepted %+v", m)
		}
	})
}

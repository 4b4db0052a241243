package pmi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Job is what one rank's connection needs of its job: the KVS and the
// barrier (a Fence), and somewhere to report an abort.
type Job interface {
	// Put stores a key for the other ranks; they see it after the next
	// barrier.
	Put(rank int, key, value string) error
	// Get returns a key put before the last barrier (or by this host's
	// ranks since).
	Get(key string) (string, bool)
	// Barrier returns once every rank of the job has entered it.
	Barrier(ctx context.Context, rank int) error
	// Abort reports that the rank called MPI_Abort.
	Abort(rank, code int, msg string)
}

// Info is what the server tells one rank about itself and its job.
type Info struct {
	Rank, Size int
	KVSName    string
	// Mapping is the value of PMI_process_mapping (ProcessMapping).
	Mapping string
}

// MappingKey is the key MPICH gets to learn which ranks share a host.
const MappingKey = "PMI_process_mapping"

// Session is what Serve saw of one rank: whether it finalized or aborted.
type Session struct {
	Finalized bool
	Aborted   bool
	Barriers  int
}

// Serve answers the PMI-1 requests of one rank on conn until the rank
// closes it, ctx ends, or the rank breaks the protocol (then it answers
// cmd=error with rc=-1 and the reason, and returns the error). It closes
// conn before it returns.
func Serve(ctx context.Context, conn io.ReadWriteCloser, info Info, j Job) (Session, error) {
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	defer conn.Close()
	s := &server{info: info, job: j, w: conn}
	br := bufio.NewReaderSize(conn, MaxLine+1)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return s.fail(fmt.Errorf("%w: line longer than %d bytes", ErrProtocol, MaxLine))
		}
		if err != nil {
			if len(line) > 0 && !errors.Is(err, io.EOF) || ctx.Err() != nil {
				return s.sess, errors.Join(err, ctx.Err())
			}
			return s.sess, nil // the rank closed its end
		}
		req, err := Parse(strings.TrimRight(string(line), "\r\n"))
		if err != nil {
			return s.fail(err)
		}
		done, err := s.handle(ctx, req)
		if err != nil {
			return s.fail(err)
		}
		if done {
			return s.sess, nil
		}
	}
}

type server struct {
	info  Info
	job   Job
	w     io.Writer
	sess  Session
	keys  int // keys put so far
	bytes int // bytes of keys and values put so far
}

func (s *server) fail(err error) (Session, error) {
	_ = s.send("cmd", "error", "rc", "-1", "msg", word(err.Error()))
	return s.sess, err
}

func (s *server) send(kv ...string) error {
	_, err := io.WriteString(s.w, Reply(kv...))
	return err
}

// handle answers one request; done is true after abort.
func (s *server) handle(ctx context.Context, r Request) (done bool, err error) {
	i := s.info
	switch r.Cmd {
	case "init":
		if v := r.Fields["pmi_version"]; v != "1" {
			_ = s.send("cmd", "response_to_init", "pmi_version", "1", "pmi_subversion", "1", "rc", "-1")
			return true, fmt.Errorf("%w: client asks for PMI version %q, this agent speaks 1", ErrProtocol, clip(v))
		}
		return false, s.send("cmd", "response_to_init", "pmi_version", "1", "pmi_subversion", "1", "rc", "0")
	case "get_maxes":
		return false, s.send("cmd", "maxes", "kvsname_max", strconv.Itoa(MaxKVSName),
			"keylen_max", strconv.Itoa(MaxKey), "vallen_max", strconv.Itoa(MaxValue), "rc", "0")
	case "get_appnum":
		return false, s.send("cmd", "appnum", "appnum", "0", "rc", "0")
	case "get_my_kvsname":
		return false, s.send("cmd", "my_kvsname", "kvsname", i.KVSName, "rc", "0")
	case "get_universe_size":
		return false, s.send("cmd", "universe_size", "size", strconv.Itoa(i.Size), "rc", "0")
	case "put":
		return false, s.put(r)
	case "get":
		return false, s.get(r)
	case "barrier_in":
		if err := s.job.Barrier(ctx, i.Rank); err != nil {
			return true, fmt.Errorf("barrier: %w", err)
		}
		s.sess.Barriers++
		return false, s.send("cmd", "barrier_out", "rc", "0")
	case "finalize":
		s.sess.Finalized = true
		return false, s.send("cmd", "finalize_ack", "rc", "0")
	case "abort":
		code, _ := strconv.Atoi(r.Fields["exitcode"])
		s.sess.Aborted = true
		s.job.Abort(i.Rank, code, r.Fields["msg"])
		return true, nil
	default:
		return false, fmt.Errorf("%w: command %q is not supported by this agent", ErrProtocol, clip(r.Cmd))
	}
}

func (s *server) put(r Request) error {
	if name := r.Fields["kvsname"]; name != s.info.KVSName {
		return s.send("cmd", "put_result", "rc", "-1", "msg", word("unknown kvsname "+clip(name)))
	}
	k, v := r.Fields["key"], r.Fields["value"]
	if k == MappingKey {
		return s.send("cmd", "put_result", "rc", "-1", "msg", "key_reserved")
	}
	if s.keys+1 > MaxKeysRank || s.bytes+len(k)+len(v) > MaxBytesRank {
		return s.send("cmd", "put_result", "rc", "-1", "msg",
			word(fmt.Sprintf("over the limit of %d keys or %d bytes per rank", MaxKeysRank, MaxBytesRank)))
	}
	if err := s.job.Put(s.info.Rank, k, v); err != nil {
		return s.send("cmd", "put_result", "rc", "-1", "msg", word(err.Error()))
	}
	s.keys++
	s.bytes += len(k) + len(v)
	return s.send("cmd", "put_result", "rc", "0", "msg", "success")
}

func (s *server) get(r Request) error {
	if name := r.Fields["kvsname"]; name != s.info.KVSName {
		return s.send("cmd", "get_result", "rc", "-1", "msg", word("unknown kvsname "+clip(name)))
	}
	k := r.Fields["key"]
	v, ok := s.job.Get(k)
	if k == MappingKey {
		v, ok = s.info.Mapping, s.info.Mapping != ""
	}
	if !ok {
		return s.send("cmd", "get_result", "rc", "-1", "msg", "key_"+k+"_not_found")
	}
	return s.send("cmd", "get_result", "rc", "0", "msg", "success", "value", v)
}

// word makes text one field of a reply: spaces become underscores.
func word(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
			return '_'
		}
		return r
	}, s)
}

// ProcessMapping is the PMI_process_mapping value for a job whose rank r
// runs on host hostOf[r] (host numbers from 0): MPICH's
// (vector,(node,count,ranks per node),...), one block per run of
// consecutive ranks on one host.
func ProcessMapping(hostOf []int) string {
	var b strings.Builder
	b.WriteString("(vector")
	for r := 0; r < len(hostOf); {
		n := 1
		for r+n < len(hostOf) && hostOf[r+n] == hostOf[r] {
			n++
		}
		fmt.Fprintf(&b, ",(%d,1,%d)", hostOf[r], n)
		r += n
	}
	b.WriteString(")")
	return b.String()
}

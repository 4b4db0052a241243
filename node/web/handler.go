package web

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

//go:embed assets
var assets embed.FS

// Bounds on requests: the page's own URLs are short; anything longer is
// refused before routing.
const (
	maxURLLen      = 2048
	maxHeaderBytes = 16 << 10
	maxCursor      = 1 << 30
)

// Handler is the view's routes: the page, the JSON it reads (GET only,
// forwarded to the control API or built here), the job event streams and
// /metrics.
func Handler(d Deps) http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	mux.Handle("GET /{$}", files)
	mux.Handle("GET /static/", http.StripPrefix("/static/", files))
	mux.Handle("GET /api/id", forward(d.API, func(*http.Request) (string, error) { return "/v1/id", nil }))
	mux.Handle("GET /api/peers", forward(d.API, func(*http.Request) (string, error) { return "/v1/peers", nil }))
	mux.Handle("GET /api/agent", forward(d.API, func(*http.Request) (string, error) { return "/v1/agent", nil }))
	mux.Handle("GET /api/jobs", forward(d.API, func(*http.Request) (string, error) { return "/v1/jobs", nil }))
	mux.Handle("GET /api/jobs/{id}", forward(d.API, jobPath("")))
	mux.Handle("GET /api/jobs/{id}/outputs", forward(d.API, jobPath("/outputs")))
	mux.Handle("GET /api/jobs/{id}/outputs/{name}", forward(d.API, outputPath))
	mux.Handle("GET /api/jobs/{id}/events", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { events(w, r, d.API) }))
	cache := &graphCache{}
	mux.Handle("GET /api/graph", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, cache.get(r.Context(), d))
	}))
	if d.Metrics != nil {
		mux.Handle("GET /metrics", d.Metrics)
	}
	return guard(mux)
}

// guard refuses very long URLs (414) and malformed query strings (400),
// answers a panic in a handler with 500 instead of ending the agent, and
// sets the headers every answer carries.
func guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				log.Errorw("web view handler panicked", "path", r.URL.Path, "panic", v)
				writeError(w, http.StatusInternalServerError, "internal error")
			}
		}()
		if len(r.RequestURI) > maxURLLen || len(r.URL.String()) > maxURLLen {
			writeError(w, http.StatusRequestURITooLong, fmt.Sprintf("URL longer than %d bytes", maxURLLen))
			return
		}
		if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
			writeError(w, http.StatusBadRequest, "malformed query: "+err.Error())
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:")
		next.ServeHTTP(w, r)
	})
}

// jobPath maps /api/jobs/{id}<suffix> to the control API's route.
func jobPath(suffix string) func(*http.Request) (string, error) {
	return func(r *http.Request) (string, error) {
		id, err := proto.ParseJobID(r.PathValue("id"))
		if err != nil {
			return "", err
		}
		return "/v1/jobs/" + url.PathEscape(string(id)) + suffix, nil
	}
}

func outputPath(r *http.Request) (string, error) {
	p, err := jobPath("/outputs/")(r)
	if err != nil {
		return "", err
	}
	name := r.PathValue("name")
	if name == "" || len(name) > 255 {
		return "", fmt.Errorf("output name of %d bytes: want 1 to 255", len(name))
	}
	return p + url.PathEscape(name), nil
}

// forward answers a GET with the control API's answer to the route target
// gives; a target error is the client's (400).
func forward(api http.Handler, target func(*http.Request) (string, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, err := target(r)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		if len(r.URL.Query()) > 0 {
			writeError(w, http.StatusBadRequest, "this route takes no query parameters")
			return
		}
		api.ServeHTTP(w, apiRequest(r.Context(), path, ""))
	})
}

// apiRequest is a GET of the control API's path (escaped) with query.
func apiRequest(ctx context.Context, path, query string) *http.Request {
	u := &url.URL{Path: path, RawQuery: query}
	if unescaped, err := url.PathUnescape(path); err == nil {
		u.Path, u.RawPath = unescaped, path
	}
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	return r
}

// events streams a job's updates from ?cursor= (default 0) as server-sent
// events, one JSON update per event, until the job ends.
func events(w http.ResponseWriter, r *http.Request, api http.Handler) {
	path, err := jobPath("/watch")(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	cursor := 0
	for k, v := range r.URL.Query() {
		if k != "cursor" || len(v) != 1 {
			writeError(w, http.StatusBadRequest, "events take one query parameter: cursor")
			return
		}
		if cursor, err = strconv.Atoi(v[0]); err != nil || cursor < 0 || cursor > maxCursor {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("cursor %q: want a number from 0 to %d", v[0], maxCursor))
			return
		}
	}
	sw := &sseWriter{w: w}
	api.ServeHTTP(sw, apiRequest(r.Context(), path, "cursor="+strconv.Itoa(cursor)))
	sw.finish()
}

// sseWriter turns the control API's JSON lines into server-sent events;
// an error answer (a status other than 200) passes through unchanged.
type sseWriter struct {
	w       http.ResponseWriter
	mu      sync.Mutex
	header  http.Header
	started bool
	plain   bool
	buf     []byte
}

func (s *sseWriter) Header() http.Header {
	if s.header == nil {
		s.header = http.Header{}
	}
	return s.header
}

func (s *sseWriter) WriteHeader(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start(code)
}

func (s *sseWriter) start(code int) {
	if s.started {
		return
	}
	s.started = true
	if code != http.StatusOK {
		s.plain = true
		s.w.Header().Set("Content-Type", s.Header().Get("Content-Type"))
		s.w.WriteHeader(code)
		return
	}
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	s.w.WriteHeader(http.StatusOK)
}

func (s *sseWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start(http.StatusOK)
	if s.plain {
		return s.w.Write(b)
	}
	s.buf = append(s.buf, b...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			break
		}
		if _, err := fmt.Fprintf(s.w, "data: %s\n\n", s.buf[:i]); err != nil {
			return 0, err
		}
		s.buf = s.buf[i+1:]
	}
	return len(b), nil
}

func (s *sseWriter) Flush() {
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// finish ends the stream with an "end" event, so the page need not take
// the connection's close for an error and reconnect.
func (s *sseWriter) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plain {
		return
	}
	s.start(http.StatusOK)
	_, _ = fmt.Fprint(s.w, "event: close\ndata: {}\n\n")
	s.Flush()
}

// askNeighbours asks this agent's live neighbours for their links, all at
// once; those that do not answer are left out.
func askNeighbours(ctx context.Context, d Deps, mine Self) map[string]Self {
	out := map[string]Self{}
	if d.Host == nil {
		return out
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, l := range mine.Links {
		id, err := peer.Decode(l.Peer)
		if !l.Neighbour || l.Dead || err != nil {
			continue
		}
		wg.Go(func() {
			s, err := AskLinks(ctx, d.Host, id)
			if err != nil {
				log.Debugw("neighbour's links", "err", err)
				return
			}
			mu.Lock()
			out[l.Peer] = s
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

type errorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Error: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encode"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

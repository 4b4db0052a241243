package node

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/zorilla-p2p/zorilla/node/web"
)

// webPair starts agent a with the web view on a free loopback port and
// agent b bootstrapping from it, and waits until a measured b.
func webPair(t *testing.T) (a, b *Node) {
	t.Helper()
	cfg := testConfig("")
	cfg.Web = "127.0.0.1:0"
	cfg.Labels = []string{"site=here"}
	a = startNode(t, cfg)
	cfg = testConfig("")
	for _, addr := range a.Addrs() {
		cfg.Bootstrap = append(cfg.Bootstrap, addr.String())
	}
	b = startNode(t, cfg)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := a.Overlay().RTT(b.ID()); ok && len(a.Overlay().Neighbours()) > 0 {
			return a, b
		}
		if time.Now().After(deadline) {
			t.Fatal("a never measured b")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func webGet(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if v != nil && resp.StatusCode == 200 {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v: %s", url, err, body)
		}
	}
	return resp.StatusCode
}

// TestWebJSONRoutes reads every JSON route the page uses from a real
// agent's view (the job routes with a job are in testnet's TestWebView).
func TestWebJSONRoutes(t *testing.T) {
	a, b := webPair(t)
	url := a.Web()
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("web URL %q", url)
	}
	var id IDInfo
	if webGet(t, url+"api/id", &id) != 200 || id.ID != a.ID() || id.Web != url {
		t.Errorf("api/id: %+v", id)
	}
	var peers PeersInfo
	if webGet(t, url+"api/peers", &peers) != 200 || peers.Known != 1 {
		t.Errorf("api/peers: %+v", peers)
	}
	var agent AgentInfo
	if webGet(t, url+"api/agent", &agent) != 200 || agent.Policy.Cores != a.cfg.Cores || agent.Policy.Labels[0] != "site=here" || agent.Leases == nil {
		t.Errorf("api/agent: %+v", agent)
	}
	var jobs []json.RawMessage
	if webGet(t, url+"api/jobs", &jobs) != 200 || len(jobs) != 0 {
		t.Errorf("api/jobs: %d jobs", len(jobs))
	}
	var g web.Graph
	if webGet(t, url+"api/graph", &g) != 200 || len(g.Nodes) != 2 || len(g.Edges) != 1 || g.Self != a.ID().String() {
		t.Fatalf("api/graph: %+v", g)
	}
	if e := g.Edges[0]; e.RTTms <= 0 || e.Conn != ConnDirect {
		t.Errorf("edge %+v: want a measured direct link", e)
	}
	for _, n := range g.Nodes {
		if want := map[bool]string{true: "site=here", false: "cluster 1"}[n.Self]; n.Group != want {
			t.Errorf("node %s in %q, want %q", n.ID, n.Group, want)
		}
	}
	if b.Web() != "" {
		t.Error("b serves a view it was not asked for")
	}
	page, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	html, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if page.StatusCode != 200 || !strings.Contains(string(html), "/static/app.js") {
		t.Errorf("page: %d", page.StatusCode)
	}
	if code := webGet(t, url+"static/app.js", nil); code != 200 {
		t.Errorf("app.js: %d", code)
	}
}

// TestWebBadInput sends what a browser or a script might get wrong: 4xx
// answers, and the agent carries on.
func TestWebBadInput(t *testing.T) {
	a, _ := webPair(t)
	url := a.Web()
	for _, tc := range []struct {
		path string
		code int
	}{
		{"api/jobs/nosuchjob", 404},
		{"api/jobs/nosuchjob/outputs", 404},
		{"api/jobs/nosuchjob/outputs/x", 404},
		{"api/jobs/nosuchjob/events", 404},
		{"api/jobs/" + strings.Repeat("x", 100), 400},
		{"api/jobs/a%2Fb", 400},
		{"api/jobs/nosuchjob/events?cursor=-1", 400},
		{"api/jobs/nosuchjob/events?cursor=abc", 400},
		{"api/jobs/nosuchjob/events?cursor=1&cursor=2", 400},
		{"api/jobs/nosuchjob/events?other=1", 400},
		{"api/jobs?x=%zz", 400},
		{"api/jobs?limit=1", 400},
		{"api/" + strings.Repeat("a", 5000), 414},
		{"api/jobs/" + strings.Repeat("b", 40000), 431},
		{"api/nothing", 404},
		{"static/nothing.js", 404},
	} {
		if got := webGet(t, url+tc.path, nil); got != tc.code {
			t.Errorf("GET %.60s: %d, want %d", tc.path, got, tc.code)
		}
	}
	for _, method := range []string{"POST", "PUT", "DELETE"} {
		for _, path := range []string{"api/jobs", "api/jobs/x/cancel", "api/jobs/x", "metrics"} {
			req, _ := http.NewRequest(method, url+path, strings.NewReader("{}"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s %s: %d, want 405 or 404 (the view is read-only)", method, path, resp.StatusCode)
			}
		}
	}
	if code := webGet(t, url+"api/id", nil); code != 200 {
		t.Fatalf("after the bad requests: %d", code)
	}
}

// TestWebMetrics parses /metrics with Prometheus' own text parser.
func TestWebMetrics(t *testing.T) {
	a, _ := webPair(t)
	var g web.Graph
	if webGet(t, a.Web()+"api/graph", &g) != 200 { // asks b for its links
		t.Fatal("api/graph")
	}
	// Byte counts reach the totals on libp2p's next meter sweep (every
	// second): scrape until the links' bytes are in.
	var fams map[string]*dto.MetricFamily
	deadline := time.Now().Add(10 * time.Second)
	for {
		fams = scrape(t, a.Web()+"metrics")
		if f := fams["zorilla_libp2p_protocol_bytes_total"]; f != nil && slices.ContainsFunc(f.Metric, func(m *dto.Metric) bool {
			return hasLabel(m, "protocol", web.LinksProtocol) && hasLabel(m, "dir", "in") && m.Counter.GetValue() > 0
		}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the links protocol's bytes never reached /metrics")
		}
		time.Sleep(50 * time.Millisecond)
	}
	value := func(name string, labels ...string) (float64, bool) {
		f := fams[name]
		if f == nil {
			return 0, false
		}
	next:
		for _, m := range f.Metric {
			for i := 0; i+1 < len(labels); i += 2 {
				if !hasLabel(m, labels[i], labels[i+1]) {
					continue next
				}
			}
			switch {
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount()), true
			}
		}
		return 0, false
	}
	var tests []metricTest
	for _, tc := range []metricTest{
		{"zorilla_peers", []string{"state", "live"}, dto.MetricType_GAUGE, func(v float64) bool { return v == 1 }},
		{"zorilla_peers", []string{"state", "dead"}, dto.MetricType_GAUGE, func(v float64) bool { return v == 0 }},
		{"zorilla_neighbours", nil, dto.MetricType_GAUGE, func(v float64) bool { return v == 1 }},
		{"zorilla_peer_rtt_seconds", nil, dto.MetricType_HISTOGRAM, func(v float64) bool { return v == 1 }},
		{"zorilla_adverts_total", []string{"event", "received"}, dto.MetricType_COUNTER, func(v float64) bool { return v == 0 }},
		{"zorilla_jobs", []string{"state", "running"}, dto.MetricType_GAUGE, func(v float64) bool { return v == 0 }},
		{"zorilla_leases", []string{"state", "committed"}, dto.MetricType_GAUGE, func(v float64) bool { return v == 0 }},
		{"zorilla_processes", nil, dto.MetricType_GAUGE, func(v float64) bool { return v == 0 }},
		{"zorilla_libp2p_rcmgr_connections", []string{"dir", "outbound"}, dto.MetricType_GAUGE, func(v float64) bool { return v >= 0 }},
		{"zorilla_libp2p_protocol_streams", []string{"protocol", web.LinksProtocol, "dir", "inbound"}, dto.MetricType_GAUGE, func(v float64) bool { return v == 0 }},
		{"zorilla_libp2p_protocol_bytes_total", []string{"protocol", web.LinksProtocol, "dir", "in"}, dto.MetricType_COUNTER, func(v float64) bool { return v > 0 }},
	} {
		tests = append(tests, tc)
	}
	for _, name := range []string{"zorilla_router_messages_total", "zorilla_router_bytes_total"} {
		for _, dir := range []string{"sent", "received", "local"} { // no job ran: mpi/router's tests count real traffic
			tests = append(tests, metricTest{name, []string{"direction", dir}, dto.MetricType_COUNTER, func(v float64) bool { return v == 0 }})
		}
	}
	for _, tc := range tests {
		v, ok := value(tc.name, tc.labels...)
		if !ok || fams[tc.name].GetType() != tc.typ || !tc.check(v) {
			t.Errorf("%s%v: %v (present %v, type %v)", tc.name, tc.labels, v, ok, fams[tc.name].GetType())
		}
	}
	for name, f := range fams {
		if !strings.HasPrefix(name, "zorilla_") {
			t.Errorf("metric %s: want the zorilla_ prefix", name)
		}
		if f.GetType() == dto.MetricType_COUNTER && !strings.HasSuffix(name, "_total") {
			t.Errorf("counter %s: want a _total suffix", name)
		}
	}
}

type metricTest struct {
	name   string
	labels []string
	typ    dto.MetricType
	check  func(float64) bool
}

// scrape parses /metrics with Prometheus' text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

func hasLabel(m *dto.Metric, k, v string) bool {
	for _, l := range m.Label {
		if l.GetName() == k && l.GetValue() == v {
			return true
		}
	}
	return false
}

// TestWebAddrErrors: an address that does not parse is refused before
// the agent starts, one that is taken at start, both saying why.
func TestWebAddrErrors(t *testing.T) {
	cfg := testConfig("")
	cfg.Web = "127.0.0.1:http"
	if _, err := New(t.Context(), cfg); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "port") {
		t.Errorf("bad address: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg.Web = ln.Addr().String()
	_, err = New(t.Context(), cfg)
	if !errors.Is(err, web.ErrAddr) || !strings.Contains(err.Error(), "--web") {
		t.Errorf("taken address: %v", err)
	}
}

// TestWebNextFreePort: with WebNext, a taken address moves the view to the
// next free port after it, where it serves this agent.
func TestWebNextFreePort(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := testConfig("")
	cfg.Web, cfg.WebNext = ln.Addr().String(), true
	n := startNode(t, cfg)
	taken := ln.Addr().(*net.TCPAddr).Port
	url := n.Web()
	_, p, err := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/"))
	if err != nil || p == strconv.Itoa(taken) || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("view at %q, port %d taken: %v", url, taken, err)
	}
	var id IDInfo
	if code := webGet(t, url+"api/id", &id); code != http.StatusOK || id.ID != n.ID() || id.Web != url {
		t.Errorf("GET %sapi/id: %d, %+v; want this agent, saying where its view is", url, code, id)
	}
}

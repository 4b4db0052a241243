package testnet

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
)

// TestWebView runs an 8-rank job on a 6-agent loopback testnet whose
// agent 0 serves the web view, checks the JSON routes the page reads, then
// drives real headless Chromium through the pages: the network page shows
// the 6 agents and their links, the job page the 8 ranks on the hosts the
// record (what `zorilla status` prints) names, and a running job's output
// arrives live. Screenshots go to the test's temp dir, or to
// $ZORILLA_SCREENSHOTS when set. Without Chromium the browser part skips.
func TestWebView(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 6 agents and a browser")
	}
	ln := startLaunchNet(t, 6, 2, func(i int, cfg *node.Config) {
		cfg.Labels = nil
		if i == 0 {
			cfg.Web = "127.0.0.1:0"
		}
	})
	url := ln.Nodes[0].Web()
	if url == "" {
		t.Fatal("agent 0 serves no web view")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := ln.Await(ctx, "agent 0 knows the 5 others", func() bool { return len(ln.Nodes[0].Overlay().Peers()) >= 5 }); err != nil {
		t.Fatal(err)
	}
	prog := uploadScript(t, ln.Nodes[0], `echo "rank $ZORILLA_RANK on $ZORILLA_AGENT"; echo out > result.txt`)
	d := job.Description{Executable: "prog.sh", Nodes: 8, Replicas: 1, Strategy: job.Spread, Outputs: []string{"result.txt"}}
	rec := submitJob(t, ln.Nodes[0], d, prog).wait(t)
	if rec.State != job.Done || rec.Plan == nil {
		t.Fatalf("job ended %s (%s)", rec.State, rec.Reason)
	}
	checkJobRoutes(t, url, rec)

	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (apt-get install chromium): the browser part of this test skips")
	}
	shots := os.Getenv("ZORILLA_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.WindowSize(1200, 1000), chromedp.Flag("disable-dev-shm-usage", true))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	b := browser{t: t, ctx: bctx, shots: shots}

	b.open(url + "#/network")
	b.await("the network page shows 6 agents and 5 or more links",
		`document.querySelectorAll('#graph g.node').length === 6 && document.querySelectorAll('#graph line.edge').length >= 5 &&
		 document.querySelectorAll('#graph text.rtt').length >= 5`)
	b.shot("network.png")

	b.open(url + "#/jobs/" + string(rec.ID))
	b.await("the job page shows 8 ranks", `document.querySelectorAll('#placement .rank').length === 8`)
	b.await("the job page says 8 x 1 spread", `document.getElementById('summary').textContent.includes('8 x 1 spread')`)
	shown := evalIn[[][]string](b, `[...document.querySelectorAll('#placement .rank')].map(e => [e.dataset.rank, e.dataset.replica, e.dataset.host])`)
	if got, want := placementOf(shown), planOf(rec.Plan); got != want {
		t.Errorf("job page placement:\n%s\nrecord's (zorilla status):\n%s", got, want)
	}
	b.shot("job.png")

	gate := filepath.Join(t.TempDir(), "gate")
	live := uploadScript(t, ln.Nodes[0], fmt.Sprintf(`echo "live $ZORILLA_RANK"; while [ ! -e %q ]; do sleep 0.05; done; echo "bye $ZORILLA_RANK"`, gate))
	w := submitJob(t, ln.Nodes[0], job.Description{Executable: "prog.sh", Nodes: 4, Replicas: 1, Strategy: job.Spread}, live)
	w.awaitState(t, job.Running)
	b.open(url + "#/jobs/" + string(w.id))
	b.await("live output of the running job", `document.querySelectorAll('#output .line').length >= 4 && document.getElementById('output').textContent.includes('live 3')`)
	b.shot("live.png")
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := w.wait(t); r.State != job.Done {
		t.Fatalf("live job ended %s (%s)", r.State, r.Reason)
	}
	b.await("the finished job's page shows its end", `document.getElementById('state') && document.getElementById('state').textContent === 'done'`)

	b.open(url + "#/jobs")
	b.await("the jobs page lists both jobs, done", `document.querySelectorAll('#jobs tr.job').length === 2 &&
		[...document.querySelectorAll('#jobs tr.job td:nth-child(2)')].every(td => td.textContent === 'done')`)

	b.open(url + "#/agent")
	b.await("the agent page shows its policy", `document.body.textContent.includes('P (processes of a job)')`)
	b.shot("agent.png")
	t.Logf("screenshots in %s", shots)
}

// checkJobRoutes reads the JSON routes of a finished job as the page does.
func checkJobRoutes(t *testing.T, url string, rec job.Record) {
	t.Helper()
	var got job.Record
	getJSON(t, url+"api/jobs/"+string(rec.ID), &got)
	if got.ID != rec.ID || got.State != job.Done || len(got.Flood) == 0 {
		t.Errorf("api/jobs/%s: id %s state %s, %d flood samples", rec.ID, got.ID, got.State, len(got.Flood))
	}
	for _, s := range got.Flood {
		if s.Need != 8 || s.Radius < 1 || s.Slots < 0 {
			t.Errorf("flood sample %+v: want need 8, radius >= 1", s)
		}
	}
	var list []job.Record
	getJSON(t, url+"api/jobs", &list)
	if len(list) != 1 || list[0].ID != rec.ID {
		t.Errorf("api/jobs lists %d jobs, want the one", len(list))
	}
	var outs []submitter.OutputFile
	getJSON(t, url+"api/jobs/"+string(rec.ID)+"/outputs", &outs)
	if len(outs) != 8 {
		t.Errorf("api/jobs/%s/outputs: %d files, want 8: %v", rec.ID, len(outs), outs)
	}
	m, err := http.Get(url + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(m.Body)
	m.Body.Close()
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	done := -1.0
	for _, mt := range fams["zorilla_jobs"].GetMetric() {
		for _, l := range mt.GetLabel() {
			if l.GetName() == "state" && l.GetValue() == "done" {
				done = mt.GetGauge().GetValue()
			}
		}
	}
	if done != 1 {
		t.Errorf(`zorilla_jobs{state="done"} = %v, want 1`, done)
	}
	resp, err := http.Get(url + "api/jobs/" + string(rec.ID) + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("events: %s %q", resp.Status, ct)
	}
	var kinds []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "{}" {
			continue
		}
		var u job.Update
		if err := json.Unmarshal([]byte(line), &u); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		kinds = append(kinds, u.Kind)
	}
	if len(kinds) == 0 || kinds[len(kinds)-1] != "end" {
		t.Errorf("events of a finished job: %v, want its end", kinds)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, b)
	}
}

// placementOf and planOf list "rank.replica@host" lines, sorted.
func placementOf(shown [][]string) string {
	var out []string
	for _, s := range shown {
		if len(s) == 3 {
			out = append(out, s[0]+"."+s[1]+"@"+s[2])
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func planOf(p *job.Plan) string {
	var out []string
	for _, h := range p.Hosts {
		for _, pr := range h.Procs {
			out = append(out, fmt.Sprintf("%d.%d@%s", pr.Rank, pr.Replica, h.Offer.Peer))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// browser drives one Chromium tab.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string
}

func (b browser) open(url string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Navigate(url)); err != nil {
		b.t.Fatalf("open %s: %v", url, err)
	}
}

func evalIn[T any](b browser, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// await waits, for at most 30 s, until js is true in the page.
func (b browser) await(what, js string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](js)); err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			body, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.innerText`))
			b.shot("failed.png")
			b.t.Fatalf("page never showed %s; it shows:\n%s", what, body)
		}
		select {
		case <-tick.C:
		case <-b.ctx.Done():
			b.t.Fatalf("waiting for %s: %v", what, b.ctx.Err())
		}
	}
}

func (b browser) shot(name string) {
	buf, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(b.shots, name), buf, 0o644); err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
	}
}

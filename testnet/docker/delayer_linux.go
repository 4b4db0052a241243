package docker

import (
	"context"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"
)

// delayerPoll is how often the delayer looks at its targets file and at
// its containers' namespaces: a new container gets its latency within it.
const delayerPoll = 200 * time.Millisecond

// maxDelaysFile bounds the targets file the delayer reads.
const maxDelaysFile = 4 << 20

// retryOpen is how long the delayer waits before trying again to open a
// line that failed: the container may be starting or gone.
const retryOpen = 2 * time.Second

// RunDelayer serves the delay lines of the targets file at path until ctx
// ends: one line per running container, started when a target appears or
// its process changes (a restarted container has a new namespace), closed
// when its target goes or its process ends. One goroutine owns the lines.
func RunDelayer(ctx context.Context, path string) error {
	d := &delayer{path: path, lines: map[string]*servedLine{}, failed: map[string]time.Time{}}
	defer d.closeAll()
	tick := time.NewTicker(delayerPoll)
	defer tick.Stop()
	for {
		d.poll()
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

type delayer struct {
	path    string
	modTime time.Time
	size    int64
	targets []DelayTarget
	lines   map[string]*servedLine // by container name
	failed  map[string]time.Time   // container name -> when opening its line last failed
}

type servedLine struct {
	target DelayTarget
	netns  uint64 // inode of the namespace the line was opened in
	line   *delayLine
}

// poll re-reads the targets when the file changed, closes the lines of
// namespaces that are gone, and opens the missing ones.
func (d *delayer) poll() {
	if info, err := os.Stat(d.path); err == nil && (!info.ModTime().Equal(d.modTime) || info.Size() != d.size) {
		targets, err := readTargets(d.path)
		if err != nil {
			log.Warnw("delayer: targets unreadable", "path", d.path, "err", err)
		} else {
			d.targets, d.modTime, d.size = targets, info.ModTime(), info.Size()
		}
	}
	want := map[string]DelayTarget{}
	for _, t := range d.targets {
		want[t.Name] = t
	}
	for name, s := range d.lines {
		t, ok := want[name]
		ino, err := netnsInode(s.target.Pid)
		if !ok || err != nil || ino != s.netns || t.Pid != s.target.Pid || !slices.Equal(t.Queues, s.target.Queues) {
			d.close(name)
		}
	}
	for name, t := range want {
		if _, ok := d.lines[name]; !ok {
			d.open(t)
		}
	}
}

func (d *delayer) open(t DelayTarget) {
	ino, err := netnsInode(t.Pid)
	if err != nil || len(t.Queues) == 0 {
		return // not running (yet, or any more)
	}
	if at, ok := d.failed[t.Name]; ok && time.Since(at) < retryOpen {
		return
	}
	line, err := startDelayLine(fmt.Sprintf("/proc/%d/ns/net", t.Pid), t.Queues)
	if err != nil {
		d.failed[t.Name] = time.Now()
		log.Warnw("delayer: cannot open a delay line", "container", t.Name, "err", err)
		return
	}
	delete(d.failed, t.Name)
	log.Infow("delayer: delaying", "container", t.Name, "pid", t.Pid, "queues", len(t.Queues))
	d.lines[t.Name] = &servedLine{target: t, netns: ino, line: line}
}

func (d *delayer) close(name string) {
	s := d.lines[name]
	passed, overflow, errs := s.line.Stats()
	_ = s.line.Close()
	delete(d.lines, name)
	log.Infow("delayer: stopped", "container", name, "delayed", passed, "undelayed", overflow, "refused", errs)
}

func (d *delayer) closeAll() {
	for name := range d.lines {
		d.close(name)
	}
}

func readTargets(path string) ([]DelayTarget, error) {
	b, err := readFileLimited(path, maxDelaysFile)
	if err != nil {
		return nil, err
	}
	ts, err := decodeTargets(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ts, nil
}

// netnsInode identifies the network namespace of process pid.
func netnsInode(pid int) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

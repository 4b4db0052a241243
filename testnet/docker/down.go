package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Removed is what Down removed.
type Removed struct {
	Containers int // agents and the delayer
	Networks   int
	DataDirs   int
}

// Down removes every container and network labelled with the testnet's
// name (so it works without a state file, after a failed Up too), then
// the state and data dirs it made in cfg.Dir unless keepData. The
// latency rules and qdiscs live in the containers' namespaces and go with
// them. It checks that nothing labelled is left.
func Down(ctx context.Context, cfg Config, keepData bool) (Removed, error) {
	var r Removed
	if err := cfg.validate(); err != nil {
		return r, err
	}
	t := &Testnet{cfg: cfg, docker: dockerCLI{cfg.Docker}}
	if err := checkTools(ctx, t.docker); err != nil {
		return r, err
	}
	ids, err := t.docker.lines(ctx, "ps", "-aq", "--filter", t.labelFilter())
	if err != nil {
		return r, err
	}
	// A few at a time: docker's count of a network's endpoints has been
	// seen to go wrong when fifty containers on it were removed at once,
	// and then the network cannot be removed until dockerd restarts.
	err = forEach(ctx, len(ids), cfg.Parallel, func(i int) error {
		_, err := t.docker.run(ctx, "rm", "-f", "-v", ids[i])
		return err
	})
	if err != nil {
		return r, err
	}
	r.Containers = len(ids)
	nets, err := t.docker.lines(ctx, "network", "ls", "-q", "--filter", t.labelFilter())
	if err != nil {
		return r, err
	}
	for _, n := range nets {
		if err := t.removeNetwork(ctx, n); err != nil {
			return r, err
		}
	}
	r.Networks = len(nets)
	if err := t.checkGone(ctx); err != nil {
		return r, err
	}
	if !keepData {
		r.DataDirs, err = removeData(cfg)
	}
	return r, err
}

// removeNetwork removes a network, trying again for a few seconds while
// docker still counts endpoints of containers just removed.
func (t *Testnet) removeNetwork(ctx context.Context, id string) error {
	var err error
	for range 20 {
		if _, err = t.docker.run(ctx, "network", "rm", id); err == nil || !strings.Contains(err.Error(), "active endpoints") {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return fmt.Errorf("%w (docker's endpoint count for it is stale; restarting dockerd clears it)", err)
}

// checkGone fails if any container or network of the testnet is left.
func (t *Testnet) checkGone(ctx context.Context) error {
	ids, err1 := t.docker.lines(ctx, "ps", "-aq", "--filter", t.labelFilter())
	nets, err2 := t.docker.lines(ctx, "network", "ls", "-q", "--filter", t.labelFilter())
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if len(ids)+len(nets) > 0 {
		return fmt.Errorf("docker: testnet %s: %d containers and %d networks left after down", t.cfg.Name, len(ids), len(nets))
	}
	return nil
}

// removeData removes the data dirs and files Up wrote in cfg.Dir, as its
// state file lists them, then cfg.Dir if that leaves it empty. Nothing
// else in the folder is touched.
func removeData(cfg Config) (int, error) {
	t, err := Open(cfg)
	if errors.Is(err, ErrNotUp) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var errs []error
	n := 0
	for _, c := range t.st.Containers {
		if filepath.Dir(c.DataDir) != filepath.Clean(cfg.Dir) {
			errs = append(errs, fmt.Errorf("docker: data dir %s is not in %s; left alone", c.DataDir, cfg.Dir))
			continue
		}
		if err := os.RemoveAll(c.DataDir); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	for _, f := range []string{delaysFile, delaysFile + ".tmp", stateFile + ".tmp", stateFile} {
		if err := os.Remove(filepath.Join(cfg.Dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if rest, err := os.ReadDir(cfg.Dir); err == nil && len(rest) == 0 {
		errs = append(errs, os.Remove(cfg.Dir))
	}
	return n, errors.Join(errs...)
}

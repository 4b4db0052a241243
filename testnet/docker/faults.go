package docker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Resolve names the containers a target means: a site name (every
// container of the site), or one container by its short name (nancy-3)
// or docker name (zt-nancy-3).
func (t *Testnet) Resolve(target string) (cs []Container, site bool, err error) {
	for _, c := range t.st.Containers {
		if c.SiteName == target {
			cs = append(cs, c)
		}
	}
	if len(cs) > 0 {
		return cs, true, nil
	}
	for _, c := range t.st.Containers {
		if c.Short() == target || c.Name == target {
			return []Container{c}, false, nil
		}
	}
	return nil, false, fmt.Errorf("%w: %q (a site, site-index, or %s-site-index)", ErrUnknownTarget, target, t.cfg.Name)
}

// resolveStates is Resolve, with the state of every container of the
// testnet: what the fault commands that act on a state need.
func (t *Testnet) resolveStates(ctx context.Context, target string) ([]Container, bool, map[string]containerState, error) {
	cs, site, err := t.Resolve(target)
	if err != nil {
		return nil, false, nil, err
	}
	states, err := t.inspect(ctx)
	return cs, site, states, err
}

func names(cs []Container) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// Kill kills the target's containers at once (SIGKILL): a host that dies.
// Start brings them back.
func (t *Testnet) Kill(ctx context.Context, target string) error {
	cs, _, err := t.Resolve(target)
	if err != nil {
		return err
	}
	if _, err := t.docker.run(ctx, append([]string{"kill"}, names(cs)...)...); err != nil {
		return err
	}
	return t.refreshDelays(ctx)
}

// Start starts the target's stopped containers again (after Kill): the
// agent keeps its data dir and peer ID, and its latency is put back in its
// new network namespace.
func (t *Testnet) Start(ctx context.Context, target string) error {
	cs, _, states, err := t.resolveStates(ctx, target)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range cs {
		if states[c.Name].Status == "running" || states[c.Name].Status == "paused" {
			continue
		}
		if _, err := t.docker.run(ctx, "start", c.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		pid, err := t.docker.pid(ctx, c.Name)
		if err == nil {
			err = t.shape(ctx, c, pid)
		}
		errs = append(errs, err)
	}
	return errors.Join(append(errs, t.refreshDelays(ctx))...)
}

// Pause freezes the target's containers (cgroup freezer): a host that
// hangs, its connections open but silent.
func (t *Testnet) Pause(ctx context.Context, target string) error {
	return t.eachState(ctx, target, "pause", "running")
}

// Unpause thaws the target's paused containers.
func (t *Testnet) Unpause(ctx context.Context, target string) error {
	return t.eachState(ctx, target, "unpause", "paused")
}

// eachState runs docker cmd on the target's containers that are in state.
func (t *Testnet) eachState(ctx context.Context, target, cmd, state string) error {
	cs, _, states, err := t.resolveStates(ctx, target)
	if err != nil {
		return err
	}
	var todo []string
	for _, c := range cs {
		if states[c.Name].Status == state {
			todo = append(todo, c.Name)
		}
	}
	if len(todo) == 0 {
		return fmt.Errorf("docker: %s: no container of %q is %s", cmd, target, state)
	}
	_, err = t.docker.run(ctx, append([]string{cmd}, todo...)...)
	return err
}

// Cut disconnects the target from the network: one container from both
// its networks (it is alone), a whole site from the wan only (the site
// goes on inside, cut off from the other sites). Heal reconnects.
func (t *Testnet) Cut(ctx context.Context, target string) error {
	cs, site, states, err := t.resolveStates(ctx, target)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range cs {
		nets := []string{t.wanName()}
		if !site {
			nets = append(nets, t.netName(c.SiteName))
		}
		for _, n := range nets {
			if slices.Contains(states[c.Name].Networks, n) {
				_, err := t.docker.run(ctx, "network", "disconnect", "--force", n, c.Name)
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Heal reconnects the target's containers to every network they left,
// with their old addresses, and puts their latency back (netem shapes
// interfaces, and reconnecting makes new ones).
func (t *Testnet) Heal(ctx context.Context, target string) error {
	cs, _, states, err := t.resolveStates(ctx, target)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range cs {
		s := states[c.Name]
		want := map[string]string{t.netName(c.SiteName): c.SiteIP.String(), t.wanName(): c.WANIP.String()}
		healed := false
		for n, ip := range want {
			if !slices.Contains(s.Networks, n) {
				_, err := t.docker.run(ctx, "network", "connect", "--ip", ip, n, c.Name)
				errs = append(errs, err)
				healed = true
			}
		}
		if healed && s.Pid > 0 && t.st.Shaper == ShaperNetem {
			errs = append(errs, t.shape(ctx, c, s.Pid))
		}
	}
	return errors.Join(errs...)
}

// Targets lists what fault commands accept: sites, then containers.
func (t *Testnet) Targets() string {
	var b strings.Builder
	for _, s := range t.st.Layout.Sites {
		fmt.Fprintf(&b, "%s (%s-0..%s-%d) ", s.Name, s.Name, s.Name, s.Hosts-1)
	}
	return strings.TrimSpace(b.String())
}

package linkdelay

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"
)

// Bounds on a table.
const (
	// MaxDelay bounds a one-way delay: half the longest RTT a docker
	// testnet's site file may give (10 s). More is a typo.
	MaxDelay = 5 * time.Second
	// MaxRules bounds a table: a docker testnet has two subnets per site
	// and at most 256 sites.
	MaxRules = 1024
)

// ErrRule is wrapped by every error about a table's rules.
var ErrRule = errors.New("linkdelay: bad delay rule")

// Rule delays what is sent to the addresses of one subnet.
type Rule struct {
	Subnet netip.Prefix  // masked
	Delay  time.Duration // one way, in [0, MaxDelay]
}

// String is the rule as ParseRule reads it, e.g. "10.90.1.0/24=5ms".
func (r Rule) String() string { return r.Subnet.String() + "=" + r.Delay.String() }

// ParseRule reads "SUBNET=DELAY", e.g. "10.90.1.0/24=5ms" or
// "127.0.0.2/32=10.5ms". The subnet's host bits are dropped.
func ParseRule(s string) (Rule, error) {
	sub, d, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok {
		return Rule{}, fmt.Errorf("%w %q: want SUBNET=DELAY, e.g. 10.90.1.0/24=5ms", ErrRule, s)
	}
	p, err := netip.ParsePrefix(strings.TrimSpace(sub))
	if err != nil {
		return Rule{}, fmt.Errorf("%w %q: subnet: want a CIDR prefix such as 10.90.1.0/24: %w", ErrRule, s, err)
	}
	delay, err := time.ParseDuration(strings.TrimSpace(d))
	if err != nil {
		return Rule{}, fmt.Errorf("%w %q: delay: want a duration such as 5ms or 10.5ms: %w", ErrRule, s, err)
	}
	r := Rule{Subnet: p.Masked(), Delay: delay}
	return r, r.check()
}

func (r Rule) check() error {
	if !r.Subnet.IsValid() {
		return fmt.Errorf("%w: no subnet", ErrRule)
	}
	if r.Delay < 0 || r.Delay > MaxDelay {
		return fmt.Errorf("%w %s: delay %v out of [0, %v]", ErrRule, r, r.Delay, MaxDelay)
	}
	return nil
}

// Table is a set of rules: the delay to an address is the one of the
// longest subnet that holds it, none if no subnet does. A Table is not
// changed after NewTable, so it is safe for concurrent use.
type Table struct {
	rules []Rule // longest prefix first
}

// ParseTable reads rules as ParseRule does, one per item.
func ParseTable(items []string) (*Table, error) {
	rules := make([]Rule, 0, len(items))
	for _, s := range items {
		r, err := ParseRule(s)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return NewTable(rules)
}

// NewTable checks rules (each delay in [0, MaxDelay], no subnet twice, at
// most MaxRules) and orders them for lookup.
func NewTable(rules []Rule) (*Table, error) {
	if len(rules) > MaxRules {
		return nil, fmt.Errorf("%w: %d rules, at most %d", ErrRule, len(rules), MaxRules)
	}
	seen := make(map[netip.Prefix]bool, len(rules))
	t := &Table{rules: make([]Rule, 0, len(rules))}
	for _, r := range rules {
		r.Subnet = r.Subnet.Masked()
		if err := r.check(); err != nil {
			return nil, err
		}
		if seen[r.Subnet] {
			return nil, fmt.Errorf("%w: subnet %s given twice", ErrRule, r.Subnet)
		}
		seen[r.Subnet] = true
		t.rules = append(t.rules, r)
	}
	sort.SliceStable(t.rules, func(i, j int) bool { return t.rules[i].Subnet.Bits() > t.rules[j].Subnet.Bits() })
	return t, nil
}

// DelayTo is the delay of what is sent to a: the longest matching
// subnet's, 0 if none holds it.
func (t *Table) DelayTo(a netip.Addr) time.Duration {
	a = a.Unmap()
	for _, r := range t.rules {
		if r.Subnet.Contains(a) {
			return r.Delay
		}
	}
	return 0
}

// Rules returns the table's rules, longest subnet first.
func (t *Table) Rules() []Rule { return append([]Rule(nil), t.rules...) }

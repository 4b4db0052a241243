package docker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ErrSites is wrapped by every error about a site file.
var ErrSites = errors.New("docker: bad site file")

// Bounds on a site file: what one machine's docker and the address plan
// (one /24 per site, .2 to .254 for its hosts) can hold.
const (
	MaxSites        = 64
	MaxHostsPerSite = 250
	maxCores        = 1024
	maxRTT          = 10 * time.Second
	maxSiteFileSize = 64 << 10
	maxNameLen      = 32
)

// Site is a group of agent containers on one bridge network, like a
// Grid'5000 cluster.
type Site struct {
	Name  string
	Hosts int           // agent containers
	Cores int           // cores (and P) of each agent
	RTT   time.Duration // to the first site; 0 for the first site itself
}

// Link sets the RTT between two sites explicitly.
type Link struct {
	A, B string
	RTT  time.Duration
}

// Layout is a parsed site file: the sites in order and the explicit links.
//
// RTTs are given from the first site, as the P2P-MPI paper gives them from
// nancy. Between two other sites without a Link the RTT is the larger of
// their two RTTs to the first site: the paper does not give these, and a
// site is never closer to a far site than the far site is to the first.
type Layout struct {
	Sites []Site
	Links []Link
}

// Size is the number of agent containers.
func (s Layout) Size() int {
	n := 0
	for _, site := range s.Sites {
		n += site.Hosts
	}
	return n
}

// Index returns the position of the named site, or -1.
func (s Layout) Index(name string) int {
	for i, site := range s.Sites {
		if site.Name == name {
			return i
		}
	}
	return -1
}

// RTT is the round-trip time between an agent of site a and one of site b
// (indexes into Sites); local is the RTT inside a site.
func (s Layout) RTT(a, b int, local time.Duration) time.Duration {
	if a == b {
		return local
	}
	for _, l := range s.Links {
		if (l.A == s.Sites[a].Name && l.B == s.Sites[b].Name) || (l.A == s.Sites[b].Name && l.B == s.Sites[a].Name) {
			return l.RTT
		}
	}
	if a == 0 {
		return s.Sites[b].RTT
	}
	if b == 0 {
		return s.Sites[a].RTT
	}
	return max(s.Sites[a].RTT, s.Sites[b].RTT)
}

// EvenSites spreads n agents of the given cores over k sites named
// site0..site{k-1}, the i-th at i*step from the first: the layout of
// "testnet up --nodes N" without a site file.
func EvenSites(n, k, cores int, step time.Duration) Layout {
	var s Layout
	for i := range k {
		hosts := n / k
		if i < n%k {
			hosts++
		}
		if hosts > 0 {
			s.Sites = append(s.Sites, Site{Name: fmt.Sprintf("site%d", i), Hosts: hosts, Cores: cores, RTT: time.Duration(i) * step})
		}
	}
	return s
}

var (
	// nancy 6 hosts x 4 cores | lyon 4 x 2 at 10.5 ms
	siteLine = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_]*)\s+(\d+)\s*(?:hosts?)?\s*x\s*(\d+)\s*(?:cores?)?(?:\s+at\s+([0-9.]+)\s*(ms|s|us|µs))?$`)
	// link lyon rennes 18 ms
	linkLine = regexp.MustCompile(`^link\s+([A-Za-z][A-Za-z0-9_]*)\s+([A-Za-z][A-Za-z0-9_]*)\s+(?:at\s+)?([0-9.]+)\s*(ms|s|us|µs)$`)
)

// ParseSites reads a site file: one site per line (or per ';'), '#'
// starts a comment.
//
//	nancy 6 hosts x 4 cores       # the first site: RTTs are given from it
//	lyon 4 x 2 at 10.5 ms         # 4 agents of 2 cores, 10.5 ms from nancy
//	rennes 4 hosts x 2 cores at 11.6 ms
//	link lyon rennes 15 ms        # optional: an RTT between two other sites
//
// The first site has no "at"; every other site needs one.
func ParseSites(r io.Reader) (Layout, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxSiteFileSize+1))
	if err != nil {
		return Layout{}, fmt.Errorf("%w: read: %w", ErrSites, err)
	}
	if len(b) > maxSiteFileSize {
		return Layout{}, fmt.Errorf("%w: larger than %d bytes", ErrSites, maxSiteFileSize)
	}
	var s Layout
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(make([]byte, 0, 4096), maxSiteFileSize)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		for part := range strings.SplitSeq(line, ";") {
			part = strings.Join(strings.Fields(part), " ")
			if part == "" {
				continue
			}
			if err := s.parseLine(part); err != nil {
				return Layout{}, fmt.Errorf("%w: line %d: %w", ErrSites, n, err)
			}
		}
	}
	if err := s.Validate(); err != nil {
		return Layout{}, err
	}
	return s, nil
}

// ParseSitesString parses a site file given as a string.
func ParseSitesString(s string) (Layout, error) { return ParseSites(strings.NewReader(s)) }

func (s *Layout) parseLine(line string) error {
	if m := linkLine.FindStringSubmatch(line); m != nil {
		rtt, err := parseRTT(m[3], m[4])
		if err != nil {
			return err
		}
		s.Links = append(s.Links, Link{A: m[1], B: m[2], RTT: rtt})
		return nil
	}
	m := siteLine.FindStringSubmatch(line)
	if m == nil {
		return fmt.Errorf("%q: want \"NAME HOSTS x CORES [at RTT ms]\" or \"link A B RTT ms\"", line)
	}
	hosts, err1 := strconv.Atoi(m[2])
	cores, err2 := strconv.Atoi(m[3])
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("%q: %w", line, err)
	}
	site := Site{Name: m[1], Hosts: hosts, Cores: cores}
	if m[4] != "" {
		if site.RTT, err1 = parseRTT(m[4], m[5]); err1 != nil {
			return err1
		}
	}
	if len(s.Sites) == 0 && m[4] != "" {
		return fmt.Errorf("%q: the first site is where RTTs are measured from; it takes no \"at\"", line)
	}
	if len(s.Sites) > 0 && m[4] == "" {
		return fmt.Errorf("%q: needs \"at RTT ms\" (its RTT to %s)", line, s.Sites[0].Name)
	}
	s.Sites = append(s.Sites, site)
	return nil
}

func parseRTT(num, unit string) (time.Duration, error) {
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("RTT %q is not a number", num)
	}
	scale := map[string]float64{"s": 1e9, "ms": 1e6, "us": 1e3, "µs": 1e3}[unit]
	ns := v * scale
	if ns <= 0 || ns > float64(maxRTT) {
		return 0, fmt.Errorf("RTT %s %s: want more than 0 and at most %v", num, unit, maxRTT)
	}
	return time.Duration(math.Round(ns)), nil
}

// Validate checks the bounds of a site layout, however it was made.
func (s Layout) Validate() error {
	var errs []error
	if len(s.Sites) == 0 || len(s.Sites) > MaxSites {
		errs = append(errs, fmt.Errorf("%d sites, want 1 to %d", len(s.Sites), MaxSites))
	}
	seen := map[string]bool{}
	for i, site := range s.Sites {
		if seen[site.Name] || !validName(site.Name) {
			errs = append(errs, fmt.Errorf("site %d: name %q is repeated or not [A-Za-z][A-Za-z0-9_]* of at most %d", i, site.Name, maxNameLen))
		}
		seen[site.Name] = true
		if site.Hosts < 1 || site.Hosts > MaxHostsPerSite || site.Cores < 1 || site.Cores > maxCores {
			errs = append(errs, fmt.Errorf("site %s: %d hosts x %d cores, want 1..%d hosts of 1..%d cores", site.Name, site.Hosts, site.Cores, MaxHostsPerSite, maxCores))
		}
		if site.RTT < 0 || site.RTT > maxRTT || (i == 0) != (site.RTT == 0) {
			errs = append(errs, fmt.Errorf("site %s: RTT %v (the first site has none, the others more than 0 up to %v)", site.Name, site.RTT, maxRTT))
		}
	}
	for _, l := range s.Links {
		if !seen[l.A] || !seen[l.B] || l.A == l.B || l.RTT <= 0 || l.RTT > maxRTT {
			errs = append(errs, fmt.Errorf("link %s %s %v: unknown or equal sites, or RTT out of (0, %v]", l.A, l.B, l.RTT, maxRTT))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrSites, errors.Join(errs...))
	}
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > maxNameLen || !isLetter(s[0]) {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !isLetter(c) && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// String writes the layout back in the site file format.
func (s Layout) String() string {
	var b strings.Builder
	for i, site := range s.Sites {
		fmt.Fprintf(&b, "%s %d hosts x %d cores", site.Name, site.Hosts, site.Cores)
		if i > 0 {
			fmt.Fprintf(&b, " at %s ms", strconv.FormatFloat(float64(site.RTT)/1e6, 'f', -1, 64))
		}
		b.WriteByte('\n')
	}
	for _, l := range s.Links {
		fmt.Fprintf(&b, "link %s %s %s ms\n", l.A, l.B, strconv.FormatFloat(float64(l.RTT)/1e6, 'f', -1, 64))
	}
	return b.String()
}

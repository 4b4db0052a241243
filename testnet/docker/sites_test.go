package docker

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseSites(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	tests := []struct {
		name string
		in   string
		want Layout
	}{
		{"two sites", "nancy 6 hosts x 4 cores\nlyon 4 x 2 at 10.5 ms\n",
			Layout{Sites: []Site{{"nancy", 6, 4, 0}, {"lyon", 4, 2, ms(10.5)}}}},
		{"a one-liner with ';'", "nancy 60 hosts x 4 cores; lyon 50 x 2 at 10.5 ms; rennes 90 x 2 at 11.6 ms",
			Layout{Sites: []Site{{"nancy", 60, 4, 0}, {"lyon", 50, 2, ms(10.5)}, {"rennes", 90, 2, ms(11.6)}}}},
		{"comments, blanks, singular, spaces", "# Grid'5000\n\n  nancy   1 host x 1 core   # alone\nsophia 2x4 at 17.1ms\n",
			Layout{Sites: []Site{{"nancy", 1, 1, 0}, {"sophia", 2, 4, ms(17.1)}}}},
		{"other units", "a 1 x 1\nb 1 x 1 at 0.02 s\nc 1 x 1 at 500 us",
			Layout{Sites: []Site{{"a", 1, 1, 0}, {"b", 1, 1, ms(20)}, {"c", 1, 1, ms(0.5)}}}},
		{"link line", "a 1 x 1\nb 1 x 1 at 10 ms\nc 1 x 1 at 20 ms\nlink b c 15 ms",
			Layout{Sites: []Site{{"a", 1, 1, 0}, {"b", 1, 1, ms(10)}, {"c", 1, 1, ms(20)}}, Links: []Link{{"b", "c", ms(15)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSitesString(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tt.want.String() {
				t.Fatalf("got\n%s\nwant\n%s", got, tt.want)
			}
			again, err := ParseSitesString(got.String())
			if err != nil || again.String() != got.String() {
				t.Fatalf("String does not parse back: %v\n%s", err, again)
			}
		})
	}
}

func TestParseSitesErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "# nothing\n", "0 sites"},
		{"garbage", "nancy six hosts", `want "NAME HOSTS x CORES`},
		{"first site with at", "nancy 1 x 1 at 3 ms", "takes no \"at\""},
		{"second site without at", "nancy 1 x 1\nlyon 1 x 1", "needs \"at RTT ms\""},
		{"repeated site", "a 1 x 1\na 1 x 1 at 1 ms", "repeated"},
		{"zero hosts", "a 0 x 1", "0 hosts"},
		{"too many hosts", "a 251 x 1", "251 hosts"},
		{"zero cores", "a 1 x 0", "0 cores"},
		{"zero rtt", "a 1 x 1\nb 1 x 1 at 0 ms", "RTT 0 ms"},
		{"huge rtt", "a 1 x 1\nb 1 x 1 at 11 s", "RTT 11 s"},
		{"bad number", "a 1 x 1\nb 1 x 1 at 1.2.3 ms", "not a number"},
		{"link to unknown site", "a 1 x 1\nb 1 x 1 at 1 ms\nlink b c 3 ms", "unknown or equal"},
		{"link to itself", "a 1 x 1\nb 1 x 1 at 1 ms\nlink b b 3 ms", "unknown or equal"},
		{"name with a dash", "nan-cy 1 x 1", `want "NAME`},
		{"huge count", "a 99999999999999999999 x 1", "out of range"},
		{"line number", "a 1 x 1\n\nb 1 y 1", "line 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSitesString(tt.in)
			if !errors.Is(err, ErrSites) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want ErrSites containing %q", err, tt.want)
			}
		})
	}
	if _, err := ParseSitesString(strings.Repeat("# x\n", maxSiteFileSize)); !errors.Is(err, ErrSites) {
		t.Fatalf("oversized file: %v", err)
	}
}

func TestLayoutRTT(t *testing.T) {
	l, err := ParseSitesString("nancy 1 x 4\nlyon 1 x 2 at 10.5 ms\nrennes 1 x 2 at 11.6 ms\nsophia 1 x 2 at 17.1 ms\nlink lyon sophia 8 ms")
	if err != nil {
		t.Fatal(err)
	}
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	tests := []struct {
		a, b int
		want time.Duration
	}{
		{0, 0, ms(1)},    // inside a site: the local RTT
		{0, 1, ms(10.5)}, // given from the first site
		{2, 0, ms(11.6)}, // symmetric
		{1, 2, ms(11.6)}, // two other sites: the larger of their RTTs to nancy
		{2, 3, ms(17.1)},
		{3, 1, ms(8)}, // an explicit link wins, both ways
		{1, 3, ms(8)},
		{3, 3, ms(1)},
	}
	for _, tt := range tests {
		if got := l.RTT(tt.a, tt.b, ms(1)); got != tt.want {
			t.Errorf("RTT(%s, %s) = %v, want %v", l.Sites[tt.a].Name, l.Sites[tt.b].Name, got, tt.want)
		}
	}
}

func TestEvenSites(t *testing.T) {
	l := EvenSites(14, 3, 2, 10*time.Millisecond)
	if got := l.String(); got != "site0 5 hosts x 2 cores\nsite1 5 hosts x 2 cores at 10 ms\nsite2 4 hosts x 2 cores at 20 ms\n" {
		t.Fatalf("got\n%s", got)
	}
	if err := l.Validate(); err != nil || l.Size() != 14 {
		t.Fatalf("valid %v, size %d", err, l.Size())
	}
}

func FuzzParseSites(f *testing.F) {
	for _, s := range []string{
		"nancy 6 hosts x 4 cores\nlyon 4 x 2 at 10.5 ms\n",
		"a 1 x 1; b 2 x 2 at 1 s; link a b 3 ms",
		"# c\n\nx 1x1",
		"a 1 x 1\nb 1 x 1 at 1e400 ms",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		l, err := ParseSitesString(in)
		if err != nil {
			if !errors.Is(err, ErrSites) {
				t.Fatalf("error %v does not wrap ErrSites", err)
			}
			return
		}
		if err := l.Validate(); err != nil {
			t.Fatalf("parsed an invalid layout: %v", err)
		}
		again, err := ParseSitesString(l.String())
		if err != nil || again.String() != l.String() {
			t.Fatalf("round trip: %v\n%s\n%s", err, l, again)
		}
	})
}

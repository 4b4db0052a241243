package localnet

import "testing"

func TestFloodReachesAll(t *testing.T) {
	for _, tc := range []struct {
		name  string
		links [][]int
		want  bool
	}{
		{"one agent", [][]int{nil}, true},
		{"a ring", [][]int{{1}, {2}, {0}}, true},
		{"a line one way", [][]int{{1}, {2}, nil}, false},
		{"agent 2 links out but no one links to it", [][]int{{1}, {0}, {0, 1}}, false},
		{"two pairs", [][]int{{1}, {0}, {3}, {2}}, false},
		{"all to all", [][]int{{1, 2}, {0, 2}, {0, 1}}, true},
	} {
		if got := floodReachesAll(tc.links); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

package worker

import (
	"testing"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

func TestFitsMemory(t *testing.T) {
	const G = int64(1) << 30
	cases := []struct {
		name  string
		lent  int64
		holds []MemHold
		add   int64
		want  bool
	}{
		{"empty host", 4 * G, nil, 4 * G, true},
		{"too big alone", 4 * G, nil, 4*G + 1, false},
		{"two declared fit", 4 * G, []MemHold{{Declared: 2 * G}}, 2 * G, true},
		{"three declared do not", 4 * G, []MemHold{{Declared: 2 * G}, {Declared: G}}, 2 * G, false},
		{"use above declaration counts", 4 * G, []MemHold{{Declared: G, Used: 3 * G}}, 2 * G, false},
		{"use below declaration keeps the declaration", 4 * G, []MemHold{{Declared: 3 * G, Used: G}}, 2 * G, false},
		{"undeclared job charged what it uses", 4 * G, []MemHold{{Used: G}}, 3 * G, true},
		{"undeclared job charged what it uses, over", 4 * G, []MemHold{{Used: G + 1}}, 3 * G, false},
		{"nothing lent", 0, nil, 1, false},
		{"nothing asked on nothing lent", 0, nil, 0, true},
		{"negative add refused", 4 * G, nil, -1, false},
		{"saturates, no overflow", proto.MaxSize, []MemHold{{Used: proto.MaxSize}, {Used: proto.MaxSize}}, 1, false},
	}
	for _, c := range cases {
		if got := FitsMemory(c.lent, c.holds, c.add); got != c.want {
			t.Errorf("%s: FitsMemory = %v, want %v", c.name, got, c.want)
		}
	}
}

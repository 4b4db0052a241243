package main

import (
	"fmt"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
)

const (
	// maxIterations is the number of timed rankings, NPB's MAX_ITERATIONS.
	maxIterations = 10
	// testArraySize is the number of keys whose rank is checked each
	// iteration (the partial verification).
	testArraySize = 5
	// seed is the generator's starting seed for the keys (NPB's
	// create_seq/find_my_seed seed).
	seed = 314159265.0
	// maxBuckets bounds every class's buckets (NPB's 1024-bucket setup).
	maxBuckets = 1 << 10
)

// params is one IS problem class: 2^totalKeysLog2 keys in [0, 2^maxKeyLog2),
// ranked with 2^bucketsLog2 buckets, and NPB 3.4's partial verification
// data: the global indices of five keys and their ranks at iteration 0,
// moved by each iteration as the class's rankShift says.
type params struct {
	class                                  npb.Class
	totalKeysLog2, maxKeyLog2, bucketsLog2 uint
	maxProcs                               int // NPB's MAX_PROCS for the class
	testIndex, testRank                    [testArraySize]int64
	// up[i] is whether test key i's rank grows with the iteration
	// (iteration+upOff) or shrinks (-(iteration+downOff)): every iteration
	// adds a small key and a large key, and where they land depends on
	// the test key.
	up             [testArraySize]bool
	upOff, downOff int64
}

// classes are NPB 3.4's IS classes S, W, A and B.
var classes = map[npb.Class]params{
	'S': {class: 'S', totalKeysLog2: 16, maxKeyLog2: 11, bucketsLog2: 9, maxProcs: 128,
		testIndex: [5]int64{48427, 17148, 23627, 62548, 4431},
		testRank:  [5]int64{0, 18, 346, 64917, 65463},
		up:        [5]bool{true, true, true, false, false}},
	'W': {class: 'W', totalKeysLog2: 20, maxKeyLog2: 16, bucketsLog2: 10, maxProcs: 1024,
		testIndex: [5]int64{357773, 934767, 875723, 898999, 404505},
		testRank:  [5]int64{1249, 11698, 1039987, 1043896, 1048018},
		up:        [5]bool{true, true, false, false, false}, upOff: -2},
	'A': {class: 'A', totalKeysLog2: 23, maxKeyLog2: 19, bucketsLog2: 10, maxProcs: 1024,
		testIndex: [5]int64{2112377, 662041, 5336171, 3642833, 4250760},
		testRank:  [5]int64{104, 17523, 123928, 8288932, 8388264},
		up:        [5]bool{true, true, true, false, false}, upOff: -1, downOff: -1},
	'B': {class: 'B', totalKeysLog2: 25, maxKeyLog2: 21, bucketsLog2: 10, maxProcs: 1024,
		testIndex: [5]int64{41869, 812306, 5102857, 18232239, 26860214},
		testRank:  [5]int64{33422937, 10244, 59149, 33135281, 99},
		up:        [5]bool{false, true, true, false, true}},
}

// knownClasses lists the keys of classes for npb.ParseClass.
const knownClasses = "SWAB"

// paramsFor parses a class letter.
func paramsFor(arg string) (params, error) {
	c, err := npb.ParseClass(arg, knownClasses)
	if err != nil {
		return params{}, err
	}
	return classes[c], nil
}

func (p params) totalKeys() int64 { return 1 << p.totalKeysLog2 }
func (p params) maxKey() int32    { return 1 << p.maxKeyLog2 }
func (p params) buckets() int     { return 1 << p.bucketsLog2 }

// shift turns a key into its bucket: key >> shift.
func (p params) shift() uint { return p.maxKeyLog2 - p.bucketsLog2 }

// expectedRank is the rank NPB expects for test key i at iteration it.
func (p params) expectedRank(i, it int) int64 {
	if p.up[i] {
		return p.testRank[i] + int64(it) + p.upOff
	}
	return p.testRank[i] - (int64(it) + p.downOff)
}

// checkSize refuses a number of ranks beyond NPB's MAX_PROCS for the
// class. Up to it every rank holds hundreds of keys at least, so rank 0
// holds the keys each iteration alters (global indices 1..2*maxIterations).
// Unlike NPB, any count is accepted, not only powers of two.
func (p params) checkSize(size int) error {
	if size < 1 || size > p.maxProcs {
		return fmt.Errorf("class %v runs on 1 to %d ranks, not %d", p.class, p.maxProcs, size)
	}
	return nil
}

package job

import "testing"

func TestAppendSampleBounded(t *testing.T) {
	var ss []FloodSample
	for i := range 3 * MaxFloodSamples {
		ss = AppendSample(ss, FloodSample{Offers: i})
		if len(ss) > MaxFloodSamples {
			t.Fatalf("%d samples kept, want at most %d", len(ss), MaxFloodSamples)
		}
	}
	if ss[0].Offers != 0 || ss[len(ss)-1].Offers != 3*MaxFloodSamples-1 {
		t.Errorf("first %d, last %d: want the first and the latest kept", ss[0].Offers, ss[len(ss)-1].Offers)
	}
	for i := 1; i < len(ss); i++ {
		if ss[i].Offers <= ss[i-1].Offers {
			t.Fatalf("samples out of order at %d: %d after %d", i, ss[i].Offers, ss[i-1].Offers)
		}
	}
}

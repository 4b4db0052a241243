package job

import "testing"

func TestFloodKey(t *testing.T) {
	id := ID("knl4pkpjcpwekrmgbcfslpnnh6")
	for _, c := range []struct {
		match int
		want  string
	}{{0, string(id)}, {1, string(id)}, {2, string(id) + ".2"}, {3, string(id) + ".3"}} {
		got := FloodKey(id, c.match)
		if got != c.want || !IsFloodKeyOf(got, id) {
			t.Errorf("FloodKey(%d) = %q (of the job: %v), want %q", c.match, got, IsFloodKeyOf(got, id), c.want)
		}
	}
	for _, key := range []string{"", "knl4pkpjcpwekrmgbcfslpnnh", "knl4pkpjcpwekrmgbcfslpnnh6.", "knl4pkpjcpwekrmgbcfslpnnh6.1",
		"knl4pkpjcpwekrmgbcfslpnnh6.02", "knl4pkpjcpwekrmgbcfslpnnh6.+3", "knl4pkpjcpwekrmgbcfslpnnh6.x", "knl4pkpjcpwekrmgbcfslpnnh6.2.2",
		"xknl4pkpjcpwekrmgbcfslpnnh6"} {
		if IsFloodKeyOf(key, id) {
			t.Errorf("IsFloodKeyOf(%q) = true", key)
		}
	}
}

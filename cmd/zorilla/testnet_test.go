package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The testnet command's refusals need no docker: bad input is a usage
// error (exit 2) before anything is built or started, and commands on a
// testnet that is not up say so (exit 1). TestDockerTestnet in
// testnet/docker runs the real thing.
func TestTestnetUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.sites")
	six := filepath.Join(dir, "six.sites")
	for path, body := range map[string]string{bad: "nancy 2 x 2\n\nlyon two x 2 at 3 ms\n", six: "a 3 x 2; b 3 x 2 at 5 ms"} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tn := []string{"--name", "zq", "--dir", filepath.Join(dir, "state")}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"up without a size", append([]string{"testnet", "up"}, tn...), 2, "give --nodes N or --sites FILE"},
		{"up with an argument", append([]string{"testnet", "up", "now"}, tn...), 2, "takes no arguments"},
		{"unreadable site file", append([]string{"testnet", "up", "--sites", filepath.Join(dir, "none")}, tn...), 2, "--sites"},
		{"bad site file", append([]string{"testnet", "up", "--sites", bad}, tn...), 2, "line 3"},
		{"nodes and sites disagree", append([]string{"testnet", "up", "--nodes", "5", "--sites", six}, tn...), 2, "--nodes 5 but"},
		{"more sites than nodes", append([]string{"testnet", "up", "--nodes", "2", "--site-count", "3"}, tn...), 2, "--site-count 3"},
		{"bad flag", []string{"testnet", "up", "--nodes", "many"}, 2, "invalid value"},
		{"kill without target", append([]string{"testnet", "kill"}, tn...), 2, "name a site or a container"},
		{"status when not up", append([]string{"testnet", "status"}, tn...), 1, "testnet not up"},
		{"cut when not up", append([]string{"testnet", "cut", "a"}, tn...), 1, "testnet not up"},
		{"bad name", []string{"testnet", "status", "--name", "no-dash", "--dir", dir}, 1, "invalid config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := zorilla(tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("want exit %d and %q:\n%v", tt.code, tt.want, r)
			}
		})
	}
}

// A fault on a target the testnet does not have is a usage error that
// lists the targets there are.
func TestTestnetUnknownTarget(t *testing.T) {
	dir := t.TempDir()
	state := `{"name":"zq","image":"x","layout":{"Sites":[{"Name":"a","Hosts":2,"Cores":2,"RTT":0}],"Links":null},
"addrs":{"sites":"10.90.0.0/16","wan":"10.91.0.0/16"},"local_rtt":1000000,"shaper":"none","quic":false,
"containers":[{"name":"zq-a-0","site":0,"site_name":"a","index":0,"cores":2,"site_ip":"10.90.0.2","wan_ip":"10.91.0.2",
"peer_id":"12D3KooWE6kBSt8pXzKFbTkbrMAHRJ89asvfh4B6oppunbfkkqoC","data_dir":"` + dir + `/a-0","joins_via":-1}]}`
	if err := os.WriteFile(filepath.Join(dir, "testnet.json"), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	r := zorilla("testnet", "pause", "--name", "zq", "--dir", dir, "b-7")
	if r.code != 2 || !strings.Contains(r.stderr, `no such container or site: "b-7"`) || !strings.Contains(r.stderr, "targets: a (a-0..a-1)") {
		t.Fatalf("%v", r)
	}
}

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
		{"down with an argument", append([]string{"testnet", "down", "now"}, tn...), 2, "takes no arguments"},
		{"down --image without --images", append([]string{"testnet", "down", "--image", "x:y"}, tn...), 2, "give --images too"},
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

// testnet down --images removes the image the testnet was started with,
// and the untagged ones, through a docker command that stands in for the
// engine (on PATH): it logs its calls and knows one testnet image.
func TestTestnetDownImages(t *testing.T) {
	fake := t.TempDir()
	calls := filepath.Join(fake, "calls")
	docker := `#!/bin/sh
echo "$*" >> ` + calls + `
case "$*" in
"info --format {{.ServerVersion}}") echo 27.5.1 ;;
"ps -aq --filter label=zorilla.testnet=zq"|"network ls -q --filter label=zorilla.testnet=zq") ;;
"image inspect -f {{.Id}} zorilla-testnet:mine") echo sha256:aaa ;;
"image inspect"*) echo "Error: No such image: $4" >&2; exit 1 ;;
"image ls -q --no-trunc --filter dangling=true --filter label=zorilla.role=image") echo sha256:bbb ;;
"image rm zorilla-testnet:mine"|"image rm sha256:bbb") echo "Deleted: $3" ;;
*) echo "unexpected docker $*" >&2; exit 3 ;;
esac
`
	if err := os.WriteFile(filepath.Join(fake, "docker"), []byte(docker), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", fake+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := t.TempDir()
	state := `{"name":"zq","image":"zorilla-testnet:mine","layout":{"Sites":[{"Name":"a","Hosts":1,"Cores":2,"RTT":0}],"Links":null},
"addrs":{"sites":"10.90.0.0/16","wan":"10.91.0.0/16"},"local_rtt":0,"shaper":"none","quic":false,"containers":[]}`
	if err := os.WriteFile(filepath.Join(dir, "testnet.json"), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	r := zorilla("testnet", "down", "--images", "--name", "zq", "--dir", dir)
	if r.code != 0 || r.stdout != "removed 0 containers, 0 networks, 0 data dirs\nremoved image zorilla-testnet:mine\nremoved image sha256:bbb\n" {
		t.Fatalf("%v", r)
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "image rm zorilla-testnet:mine\n") {
		t.Errorf("docker calls:\n%s", b)
	}
	// Again, with the state gone: the default tag is looked for (this
	// engine has none) and the untagged image still listed is removed.
	r = zorilla("testnet", "down", "--images", "--name", "zq", "--dir", dir)
	if r.code != 0 || r.stdout != "removed 0 containers, 0 networks, 0 data dirs\nremoved image sha256:bbb\n" {
		t.Errorf("second down --images: %v", r)
	}
	if b, _ := os.ReadFile(calls); !strings.Contains(string(b), "image inspect -f {{.Id}} zorilla-testnet:dev\n") {
		t.Errorf("second down --images did not look for the default image:\n%s", b)
	}
	r = zorilla("testnet", "down", "--name", "zq", "--dir", dir) // without --images, no image is touched
	if r.code != 0 || strings.Contains(r.stdout, "image") {
		t.Errorf("down without --images: %v", r)
	}
}

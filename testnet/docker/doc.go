// Package docker runs a Zorilla testnet as containers on one machine: the
// container part of the testnets in the design, driven through the docker
// command line (no docker Go module), and behind `zorilla testnet`.
//
// # Image
//
// BuildImage builds the agent and the example programs as static binaries
// (CGO_ENABLED=0) and an image FROM scratch around them (the Dockerfile in
// this folder): nothing is pulled or downloaded. The agent runs as root in
// its container and sandboxes the job processes it starts as it does on a
// machine (a user ID of their own per job, a cgroup where the container
// can write one, a network namespace): the container adds its own
// confinement around that.
//
// # Layout
//
// A site file (ParseSites) lists sites: "nancy 6 hosts x 4 cores", "lyon 4
// x 2 at 10.5 ms". Up gives each site its own bridge network, and connects
// every container to a shared "wan" network as well:
//
//	 site nancy 10.B.0.0/24       site lyon 10.B.1.0/24
//	┌────────────────────────┐   ┌──────────────────────┐
//	│ zt-nancy-0  zt-nancy-1 │   │ zt-lyon-0  zt-lyon-1 │
//	└─────┬───────────┬──────┘   └─────┬──────────┬─────┘
//	  ────┴───────────┴─── wan 10.B+1.0.0/16 ─────┴─────
//	      10.B+1.0.2  10.B+1.0.3       10.B+1.1.2 10.B+1.1.3
//
// Sites reach each other only over the wan: docker keeps bridge networks
// apart, and these are --internal (no route out, no NAT), so agents talk
// to each other and to nothing else. The wan was chosen over routing
// between the bridges because routing needs host firewall rules around
// docker's own; the wan needs none. A container's site is the third byte
// of either of its addresses, which is what the latency rules match.
// 10.0.0.0/8 is in the agent's default trusted subnets, so the resource
// manager's per-IP connection limit does not choke the testnet.
//
// Every container but the first joins through one earlier container,
// drawn with Config.Seed: nobody is special. Up writes each agent's key
// into its data dir first, so every address is known in advance, and
// starts a container once the one it joins through answers. Data dirs are
// host folders mounted at /data: `zorilla submit --data-dir DIR/nancy-0`
// works from the host.
//
// # Latency
//
// Each container delays what it sends to site t by half the RTT between
// its site and t (the other side delays the way back), so the RTT between
// two agents is the layout's (delayRules). Three shapers can do it;
// Config.Shaper picks one, and auto (pickShaper) takes the first that
// works here:
//
//   - netem, where the kernel has the netem qdisc (NetemAvailable): from
//     the host, inside the container's network namespace (nsenter), so the
//     image needs no tools, tc puts an htb root, one netem class per site
//     and u32 filters on the destination. The agents run untouched.
//   - transport, else: the agents delay their own sends. Up starts each
//     agent with the hidden --testnet-delay flag listing the subnets of
//     every site (its bridge /24 and its wan /24) with the one-way delay,
//     and the agent's TCP transport puts every connection to those
//     addresses through a delay line (internal/linkdelay), under the
//     security handshake, so every stream and libp2p ping sees it. Nothing
//     runs beside the agents and the host needs no iptables or tc. It
//     delays TCP only: with Config.QUIC, auto takes nfqueue instead and
//     transport is refused.
//   - nfqueue, when asked for or with QUIC and no netem: iptables NFQUEUE
//     rules in each namespace send the traffic for site t to queue 100+t,
//     and a helper container (the delayer, RunDelayer, `zorilla testnet
//     delayer`) holds each packet for the delay before accepting it; the
//     rules pass packets undelayed while no delayer is bound
//     (--queue-bypass).
//
// This machine's kernel has no netem (nor fq, so no BPF departure times
// either): auto takes transport here. State.Shaper and `zorilla testnet
// status` say which shaper a testnet uses.
//
// # Faults
//
// Kill (and Start again), Pause and Unpause, Cut and Heal, for one
// container or a whole site. Cutting a container disconnects it from both
// its networks; cutting a site disconnects it from the wan only, so the
// site goes on by itself.
//
// # Down
//
// Everything is labelled zorilla.testnet=<name>; Down removes every
// container and network with the label, checks none is left, and removes
// the data dirs. Shaping lives in the containers (their namespaces, or
// the agents' command lines) and goes with them. Images stay, for the next
// Up; RemoveImages (zorilla testnet down --images) removes a tag and the
// untagged agent images earlier builds left, except those a container uses.
package docker

import logging "github.com/ipfs/go-log/v2"

var log = logging.Logger("zorilla/testnet/docker")

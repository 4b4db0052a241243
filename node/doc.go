// Package node is the Zorilla agent: it loads the agent's Config, keeps its
// Ed25519 identity in the data dir, builds the one libp2p host, wires the
// overlay, flood, worker, job and MPI router services onto it, and serves the
// local control API (HTTP+JSON over a unix socket in the data dir) that the
// zorilla command talks to.
//
// Only node builds a libp2p host. Every other package takes a host.Host (or a
// narrower interface of its own), so tests run whole clusters in one process.
//
// The data dir (mode 0700) holds:
//
//	identity.key   the Ed25519 private key, mode 0600: the peer ID survives restarts
//	agent.sock     the control API, mode 0600, while the agent runs
//
// An empty DataDir gives an in-memory identity and no socket: in-process
// testnets run hundreds of agents that way, and reach the API through
// Node.API.
//
// Wiring a service: New calls start, which builds the host and the overlay,
// then each service from Host() and Overlay(). A service registers its
// stream handlers on the host, its API routes with Handle (Go 1.22 patterns
// such as "GET /v1/jobs/{id}", answering with WriteJSON/WriteError) and its
// teardown with OnClose; Close runs teardowns in reverse order, so the API
// stops first and the host last.
//
// Start-up refuses a fixed listen port another socket holds (ErrPortInUse)
// unless Config.ReusePort: libp2p binds TCP with SO_REUSEPORT, which would
// let two agents share a port. Bootstrap peers that cannot be reached are
// tried again with backoff; WithReport receives one line each time the
// agent stops or starts reaching them.
//
// Limits: the host's resource manager runs with limits chosen for an agent
// (agentLimits in resources.go, the same on every machine), the job
// protocols' endpoint refuses a peer's lease requests, offers and fetches
// over Services.RPC, and Stats (GET /v1/stats) counts every refusal by
// reason: the flood's drops, the endpoint's and the worker's.
//
// Clients (the zorilla command, tests) use Dial(dataDir) and Client: ID,
// Peers, Stats, and Do for any other route. A client whose agent is not running
// gets ErrNotRunning.
package node

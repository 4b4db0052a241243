// Package web is the agent's read-only web view: a page of the overlay
// (this agent, its neighbours and theirs, with RTTs), of the jobs
// submitted here (placement, timeline, flood, live output) and of the
// agent itself, plus /metrics for Prometheus.
//
// It owns no agent state. It forwards a fixed list of GET routes to the
// agent's control API (so it can never submit, cancel or edit anything),
// turns a job's watch stream into server-sent events, and asks each
// neighbour for its own links over LinksProtocol to draw the graph. The
// page itself (assets/) is hand-written HTML, CSS and JavaScript with SVG,
// embedded in the binary: no CDN, no build step.
//
// Callers build a Server with Serve and close it with the agent. The view
// binds to loopback unless given another address explicitly (Warning says
// what to tell the user then).
package web

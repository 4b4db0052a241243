package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/node/web"
)

// webFlag is the agent's --web: where its read-only web view listens.
func webFlag() cli.Flag {
	return &cli.StringFlag{Name: "web", EnvVars: []string{"ZORILLA_WEB"}, Value: web.DefaultAddr,
		Usage: "`HOST:PORT` of the read-only web view and /metrics (port 0: any free one), or off; " +
			"an address other than loopback shows peer IDs and job names to whoever can reach it; " +
			"when the default is taken (another agent of this machine), the view takes the next free port"}
}

// webConfig reads --web into cfg.
func webConfig(c *cli.Context, cfg *node.Config) error {
	addr := strings.TrimSpace(c.String("web"))
	if addr == "off" || addr == "" {
		cfg.Web = ""
		return nil
	}
	if _, err := web.ParseAddr(addr); err != nil {
		return usageErrorf("--web: %v", err)
	}
	cfg.Web = addr
	// The default address moves to the next free port when another agent
	// of this machine has it; one the owner gave is refused when taken.
	cfg.WebNext = !c.IsSet("web")
	return nil
}

// printWeb says where the view is, with a warning when it is not on
// loopback.
func printWeb(out, errw io.Writer, cfg node.Config, n *node.Node) {
	if n.Web() == "" {
		return
	}
	moved := ""
	if url := n.Web(); url != "http://"+cfg.Web+"/" && cfg.WebNext {
		moved = fmt.Sprintf(" (%s is taken)", cfg.Web)
	}
	fmt.Fprintf(out, "web view on %s%s\n", n.Web(), moved)
	if w := web.Warning(cfg.Web); w != "" {
		fmt.Fprintf(errw, "zorilla agent: warning: %s\n", w)
	}
}

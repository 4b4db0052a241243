// Package docker runs a Zorilla testnet as containers on one machine.
package docker

import logging "github.com/ipfs/go-log/v2"

var log = logging.Logger("zorilla/testnet/docker")

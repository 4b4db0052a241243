package node

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/crypto"
)

// ErrDataDir is wrapped by errors about the data dir or what is in it.
var ErrDataDir = errors.New("node: data dir unusable")

// Names of the files in the data dir.
const (
	IdentityFile = "identity.key" // the agent's Ed25519 private key, mode 0600
	SocketFile   = "agent.sock"   // the control API, mode 0600
)

// prepareDataDir creates dir (mode 0700) if needed and checks that it is a
// directory this process can read and write.
func prepareDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%w: %w", ErrDataDir, err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDataDir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrDataDir, dir)
	}
	if _, err := os.ReadDir(dir); err != nil {
		return fmt.Errorf("%w: %w", ErrDataDir, err)
	}
	probe, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return fmt.Errorf("%w: %s is not writable: %w", ErrDataDir, dir, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// loadIdentity reads the agent's key from dir, or creates one on first
// start. The key is what keeps the peer ID across restarts.
func loadIdentity(dir string) (crypto.PrivKey, error) {
	path := filepath.Join(dir, IdentityFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createIdentity(dir, path)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: read identity: %w", ErrDataDir, err)
	}
	key, err := crypto.UnmarshalPrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("%w: identity %s is corrupt: %w", ErrDataDir, path, err)
	}
	if key.Type() != crypto.Ed25519 {
		return nil, fmt.Errorf("%w: identity %s is a %s key, want Ed25519", ErrDataDir, path, key.Type())
	}
	if info, err := os.Stat(path); err == nil && info.Mode().Perm()&0o077 != 0 {
		log.Warnw("identity key is readable by others; chmod 600 it", "path", path, "mode", info.Mode().Perm())
	}
	return key, nil
}

// createIdentity writes a new Ed25519 key to path with mode 0600. It
// writes a temporary file and links it into place, so a reader never sees
// half a key and two agents starting at once end with the same key.
func createIdentity(dir, path string) (crypto.PrivKey, error) {
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("node: generate identity: %w", err)
	}
	b, err := crypto.MarshalPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("node: encode identity: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".identity-*") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("%w: write identity: %w", ErrDataDir, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b)
	err = errors.Join(err, tmp.Sync(), tmp.Close())
	if err != nil {
		return nil, fmt.Errorf("%w: write identity: %w", ErrDataDir, err)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		return loadIdentity(dir) // another agent created it first
	} else if err != nil {
		return nil, fmt.Errorf("%w: write identity: %w", ErrDataDir, err)
	}
	return key, nil
}

// checkReadable checks that the owner's policy files can be read.
func checkReadable(paths ...string) error {
	for _, p := range paths {
		if p == "" {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		info, err := f.Stat()
		f.Close()
		if err != nil || !info.Mode().IsRegular() {
			return fmt.Errorf("%w: %s is not a regular file", ErrInvalidConfig, p)
		}
	}
	return nil
}

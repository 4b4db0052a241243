package node

import (
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
)

func TestIdentityPersists(t *testing.T) {
	dir := t.TempDir()
	k1, err := loadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, IdentityFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("identity file: %v, mode %v; want 0600", err, info.Mode().Perm())
	}
	k2, err := loadIdentity(dir)
	if err != nil || !k1.Equals(k2) || k1.Type() != crypto.Ed25519 {
		t.Fatalf("second load: %v, same %v", err, k1.Equals(k2))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("data dir holds %d files, want only the key", len(entries))
	}
}

func TestIdentityCreatedOnceUnderRace(t *testing.T) {
	dir := t.TempDir()
	keys := make([]crypto.PrivKey, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := loadIdentity(dir)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if k == nil || !k.Equals(keys[0]) {
			t.Fatal("agents starting at once got different identities")
		}
	}
}

func TestIdentityErrors(t *testing.T) {
	corrupt := t.TempDir()
	os.WriteFile(filepath.Join(corrupt, IdentityFile), []byte("garbage"), 0o600)
	rsa := t.TempDir()
	sk, _, _ := crypto.GenerateSecp256k1Key(rand.Reader)
	b, _ := crypto.MarshalPrivateKey(sk)
	os.WriteFile(filepath.Join(rsa, IdentityFile), b, 0o600)
	for name, dir := range map[string]string{"corrupt": corrupt, "not ed25519": rsa} {
		if _, err := loadIdentity(dir); !errors.Is(err, ErrDataDir) {
			t.Errorf("%s: %v, want ErrDataDir", name, err)
		}
	}
}

func TestPrepareDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := prepareDataDir(dir); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(dir); info.Mode().Perm() != 0o700 {
		t.Fatalf("data dir mode %v, want 0700", info.Mode().Perm())
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	for _, bad := range []string{file, filepath.Join(file, "sub")} {
		if err := prepareDataDir(bad); !errors.Is(err, ErrDataDir) {
			t.Errorf("%s: %v, want ErrDataDir", bad, err)
		}
	}
	if err := checkReadable(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("missing allow file: %v", err)
	}
	if err := checkReadable(t.TempDir()); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("directory as allow file: %v", err)
	}
	if err := checkReadable(file, ""); err != nil {
		t.Errorf("readable file: %v", err)
	}
}

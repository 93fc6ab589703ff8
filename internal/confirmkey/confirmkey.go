// Package confirmkey finds the confirmation key of a local MangleCP
// server: MANGLECP_CONFIRMATION_KEY, else the key file of the user
// (<user config dir>/manglecp/confirmation.key), created with a random key
// on first use (0600 in a 0700 directory). The library's defaults
// (manglecp.NewServer, serve.ListenAndServe) and the command line
// (`manglecp serve`, `manglecp invoke --confirm`) use the same key, so
// confirmation works between them without configuration.
package confirmkey

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// EnvVar is the environment variable that carries the key.
const EnvVar = "MANGLECP_CONFIRMATION_KEY"

// Path returns <user config dir>/manglecp/confirmation.key.
func Path() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "manglecp", "confirmation.key"), nil
}

// Hint names the key file for help texts, also when the user config
// directory is unknown.
func Hint() string {
	p, err := Path()
	if err != nil {
		return "$XDG_CONFIG_HOME/manglecp/confirmation.key"
	}
	return p
}

// Read reads the key file; it does not create it.
func Read() ([]byte, error) {
	p, err := Path()
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no --confirm-key, no %s and no key file %s (a local 'manglecp serve' creates it)", EnvVar, p)
	}
	if err != nil {
		return nil, err
	}
	key := strings.TrimSpace(string(raw))
	if key == "" {
		return nil, fmt.Errorf("the key file %s is empty", p)
	}
	return []byte(key), nil
}

// Local returns the key of the key file, creating the file with a random
// key when it does not exist yet, and the file's path.
func Local() ([]byte, string, error) {
	p, err := Path()
	if err != nil {
		return nil, "", err
	}
	if key, err := Read(); err == nil {
		return key, p, nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, p, err
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return nil, p, err
	}
	key := hex.EncodeToString(buf)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // another process created it first
		k, err := Read()
		return k, p, err
	}
	if err != nil {
		return nil, p, err
	}
	if _, err := f.WriteString(key + "\n"); err != nil {
		f.Close()
		return nil, p, err
	}
	return []byte(key), p, f.Close()
}

// Default returns the key of a server configured with none: the
// environment variable's, else the key file's (created on first use).
// source says where it came from ("MANGLECP_CONFIRMATION_KEY" or the
// file's path).
func Default() (key []byte, source string, err error) {
	if k := os.Getenv(EnvVar); k != "" {
		return []byte(k), EnvVar, nil
	}
	return Local()
}

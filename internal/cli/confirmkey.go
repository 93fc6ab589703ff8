package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/manglecp/manglecp"
)

// The confirmation key of a local server: `manglecp serve` without a
// configured confirmation_key (config file) or MANGLECP_CONFIRMATION_KEY
// uses the key in this file, creating it on first use (0600 in a 0700
// directory), so that `manglecp invoke --confirm` run by the same user
// can sign confirmation tokens the server accepts.

// confirmationKeyPath is <user config dir>/manglecp/confirmation.key.
func confirmationKeyPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "manglecp", "confirmation.key"), nil
}

// confirmationKeyHint names the key file for help texts.
func confirmationKeyHint() string {
	p, err := confirmationKeyPath()
	if err != nil {
		return "$XDG_CONFIG_HOME/manglecp/confirmation.key"
	}
	return p
}

// readConfirmationKey reads the local key file.
func readConfirmationKey() ([]byte, error) {
	p, err := confirmationKeyPath()
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no --confirm-key, no MANGLECP_CONFIRMATION_KEY and no key file %s (a local 'manglecp serve' creates it)", p)
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

// localConfirmationKey returns the local key, creating the file with a
// random key when it does not exist yet. It returns the file's path too.
func localConfirmationKey() ([]byte, string, error) {
	p, err := confirmationKeyPath()
	if err != nil {
		return nil, "", err
	}
	if key, err := readConfirmationKey(); err == nil {
		return key, p, nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, p, err
	}
	buf := make([]byte, 32)
	_, _ = rand.Read(buf)
	key := hex.EncodeToString(buf)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // another process created it first
		k, err := readConfirmationKey()
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

// useLocalConfirmationKey gives a server without a configured key one the
// user's own CLI can read: MANGLECP_CONFIRMATION_KEY, else the local key
// file (created on first use).
func useLocalConfirmationKey(opts *manglecp.Options, logger *slog.Logger) {
	if len(opts.ConfirmationKey) > 0 {
		return
	}
	if k := os.Getenv("MANGLECP_CONFIRMATION_KEY"); k != "" {
		opts.ConfirmationKey = []byte(k)
		return
	}
	key, path, err := localConfirmationKey()
	if err != nil {
		logger.Warn("no local confirmation key: confirmation tokens need confirmation_key in --config", "error", err.Error())
		return
	}
	opts.ConfirmationKey = key
	logger.Info("confirmation tokens are signed with the local key", "file", path)
}

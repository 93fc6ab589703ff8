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
	"runtime"
	"strings"
)

// EnvVar is the environment variable that carries the key.
const EnvVar = "MANGLECP_CONFIRMATION_KEY"

// Keys finds the key in an environment: Getenv reads its variables
// (MANGLECP_CONFIRMATION_KEY and those that place the user config
// directory, as os.UserConfigDir reads them: XDG_CONFIG_HOME and HOME on
// Unix). The zero Keys reads the process's own environment; a command
// given its environment (the manglecp command line) passes it, so that
// commands with different environments run side by side.
type Keys struct {
	Getenv func(key string) string
}

// Path returns <user config dir>/manglecp/confirmation.key.
func Path() (string, error) { return Keys{}.Path() }

// Hint names the key file for help texts.
func Hint() string { return Keys{}.Hint() }

// Read reads the key file; it does not create it.
func Read() ([]byte, error) { return Keys{}.Read() }

// Local returns the key of the key file, creating it; see [Keys.Local].
func Local() ([]byte, string, error) { return Keys{}.Local() }

// Default returns the key of a server configured with none; see
// [Keys.Default].
func Default() (key []byte, source string, err error) { return Keys{}.Default() }

func (k Keys) getenv(key string) string {
	if k.Getenv == nil {
		return os.Getenv(key)
	}
	return k.Getenv(key)
}

// userConfigDir is os.UserConfigDir over k's environment.
func (k Keys) userConfigDir() (string, error) {
	if k.Getenv == nil {
		return os.UserConfigDir()
	}
	var dir string
	switch runtime.GOOS {
	case "windows":
		if dir = k.getenv("AppData"); dir == "" {
			return "", errors.New("%AppData% is not defined")
		}
	case "darwin", "ios":
		if dir = k.getenv("HOME"); dir == "" {
			return "", errors.New("$HOME is not defined")
		}
		dir += "/Library/Application Support"
	case "plan9":
		if dir = k.getenv("home"); dir == "" {
			return "", errors.New("$home is not defined")
		}
		dir += "/lib"
	default: // Unix
		dir = k.getenv("XDG_CONFIG_HOME")
		if dir == "" {
			if dir = k.getenv("HOME"); dir == "" {
				return "", errors.New("neither $XDG_CONFIG_HOME nor $HOME are defined")
			}
			dir += "/.config"
		} else if !filepath.IsAbs(dir) {
			return "", errors.New("path in $XDG_CONFIG_HOME is relative")
		}
	}
	return dir, nil
}

// Path returns <user config dir>/manglecp/confirmation.key.
func (k Keys) Path() (string, error) {
	dir, err := k.userConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "manglecp", "confirmation.key"), nil
}

// Hint names the key file for help texts, also when the user config
// directory is unknown.
func (k Keys) Hint() string {
	p, err := k.Path()
	if err != nil {
		return "$XDG_CONFIG_HOME/manglecp/confirmation.key"
	}
	return p
}

// Read reads the key file; it does not create it.
func (k Keys) Read() ([]byte, error) {
	p, err := k.Path()
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
func (k Keys) Local() ([]byte, string, error) {
	p, err := k.Path()
	if err != nil {
		return nil, "", err
	}
	if key, err := k.Read(); err == nil {
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
		key, err := k.Read()
		return key, p, err
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
func (k Keys) Default() (key []byte, source string, err error) {
	if v := k.getenv(EnvVar); v != "" {
		return []byte(v), EnvVar, nil
	}
	return k.Local()
}

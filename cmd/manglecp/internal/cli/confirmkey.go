package cli

import (
	"log/slog"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/internal/confirmkey"
)

// The confirmation key of a local server: `manglecp serve` without a
// configured confirmation_key (config file) or MANGLECP_CONFIRMATION_KEY
// uses the key in the user's key file, creating it on first use, so that
// `manglecp invoke --confirm` run by the same user can sign confirmation
// tokens the server accepts. The logic is package confirmkey's, which the
// library's defaults (manglecp.NewServer) use too.

// confirmationKeyPath is <user config dir>/manglecp/confirmation.key.
func confirmationKeyPath(env Env) (string, error) { return keys(env).Path() }

// confirmationKeyHint names the key file for help texts.
func confirmationKeyHint(env Env) string { return keys(env).Hint() }

// readConfirmationKey reads the local key file.
func readConfirmationKey(env Env) ([]byte, error) { return keys(env).Read() }

// useLocalConfirmationKey gives a server without a configured key one the
// user's own CLI can read: MANGLECP_CONFIRMATION_KEY, else the local key
// file (created on first use).
func useLocalConfirmationKey(env Env, opts *manglecp.Options, logger *slog.Logger) {
	if len(opts.ConfirmationKey) > 0 {
		return
	}
	key, source, err := keys(env).Default()
	if err != nil {
		logger.Warn("no local confirmation key: confirmation tokens need confirmation_key in --config", "error", err.Error())
		return
	}
	opts.ConfirmationKey = key
	if source != confirmkey.EnvVar {
		logger.Info("confirmation tokens are signed with the local key", "file", source)
	}
}

// localConfirmationKey returns the local key, creating the file with a
// random key when it does not exist yet, and the file's path.
func localConfirmationKey(env Env) ([]byte, string, error) { return keys(env).Local() }

// keys finds the local key in env.
func keys(env Env) confirmkey.Keys { return confirmkey.Keys{Getenv: env.Getenv} }

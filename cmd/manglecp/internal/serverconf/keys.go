package serverconf

import (
	"log/slog"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/internal/confirmkey"
)

// UseLocalConfirmationKey gives a server without a configured key one the
// user's own CLI can read: `manglecp serve` without confirmation_key in
// --config uses MANGLECP_CONFIRMATION_KEY, else the key in the user's key
// file, creating it on first use, so that `manglecp invoke --confirm` run
// by the same user can sign confirmation tokens the server accepts. The
// logic is package confirmkey's, which the library's defaults
// (manglecp.NewServer) use too.
func UseLocalConfirmationKey(env cmdline.Env, opts *manglecp.Options, logger *slog.Logger) {
	if len(opts.ConfirmationKey) > 0 {
		return
	}
	key, source, err := cmdline.Keys(env).Default()
	if err != nil {
		logger.Warn("no local confirmation key: confirmation tokens need confirmation_key in --config", "error", err.Error())
		return
	}
	opts.ConfirmationKey = key
	if source != confirmkey.EnvVar {
		logger.Info("confirmation tokens are signed with the local key", "file", source)
	}
}

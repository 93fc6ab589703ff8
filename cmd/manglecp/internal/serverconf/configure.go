package serverconf

import (
	"cmp"
	"fmt"
	"log/slog"
	"os"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/domains/workspace"
	"github.com/manglecp/manglecp/store"
)

// workspaceEditKey is the workspace's edit key: edit_key of the config,
// else MANGLECP_EDIT_KEY (checked: 16+ characters, not guessable), else
// derived from the configured confirmation key (config or
// MANGLECP_CONFIRMATION_KEY), which replicas share; nil (a random key per
// process) when none is configured.
func workspaceEditKey(env cmdline.Env, fromConfig string, confirmKey []byte) ([]byte, error) {
	if k := cmp.Or(fromConfig, env.Getenv(workspace.EditKeyEnv)); k != "" {
		if err := store.CheckKey([]byte(k)); err != nil {
			return nil, fmt.Errorf("the workspace edit key (edit_key or %s) is not fit: %v; use a random one (for example openssl rand -base64 24)", workspace.EditKeyEnv, err)
		}
		return []byte(k), nil
	}
	if len(confirmKey) == 0 {
		confirmKey = []byte(env.Getenv("MANGLECP_CONFIRMATION_KEY"))
	}
	if len(confirmKey) > 0 {
		return workspace.DeriveEditKey(confirmKey), nil
	}
	return nil, nil
}

// Configure turns flags into a domain and options: the domain dom chooses
// (nil: the embedded browser domain), or its actions with the rules of
// dir; options from the config file and the token.
func Configure(env cmdline.Env, rulesDir, configPath, token string, logger *slog.Logger, dom *DomainFlags) (manglecp.Domain, *manglecp.Options, error) {
	opts := &manglecp.Options{Logger: logger}
	if token != "" {
		if len(token) < 16 {
			return manglecp.Domain{}, nil, fmt.Errorf("--auth-token must be at least 16 characters")
		}
		opts.AuthTokens = []string{token}
	}
	dcfg := browser.Config{Config: chrome.Config{Logger: logger}}
	editKey := ""
	if configPath != "" {
		c, err := Load(configPath)
		if err != nil {
			return manglecp.Domain{}, nil, err
		}
		editKey = c.EditKey
		c.Apply(opts)
		dcfg.ReportDir = c.ReportDir
		dcfg.Config = c.Browser
		dcfg.Logger = logger
	}
	if dom != nil && dom.Gateway {
		return manglecp.Domain{}, opts, nil // the gateway domain replaces it
	}
	if dom != nil {
		if err := dom.Browser.check(); err != nil {
			return manglecp.Domain{}, nil, err
		}
		dom.Browser.apply(&dcfg)
	}
	if dom != nil {
		key, err := workspaceEditKey(env, editKey, opts.ConfirmationKey)
		if err != nil {
			return manglecp.Domain{}, nil, err
		}
		dom.editKey = key
	}
	d, err := dom.domain(dcfg)
	if err != nil {
		return manglecp.Domain{}, nil, err
	}
	if rulesDir != "" {
		st, err := os.Stat(rulesDir)
		if err != nil {
			return manglecp.Domain{}, nil, fmt.Errorf("--rules: %w", err)
		}
		if !st.IsDir() {
			return manglecp.Domain{}, nil, fmt.Errorf("--rules: %s is not a directory", rulesDir)
		}
		d.Rules, d.RulesName = os.DirFS(rulesDir), rulesDir
	}
	return d, opts, nil
}

package serve

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/store"
	redisstore "github.com/manglecp/manglecp/store/redis"
)

// opsFlags are serve's operations flags: logging, metrics, shared store.
type opsFlags struct {
	metricsAddr string
	logFormat   string
	logLevel    string
	store       string
	// storeKey is store_key of the config file (serve sets it); else
	// MANGLECP_STORE_KEY.
	storeKey string
}

func (f *opsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve /metrics, /healthz and /readyz on this HOST:PORT instead of the public listener")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info (one access log line per request), warn or error")
	fs.StringVar(&f.store, "store", "memory", "where replicas share macro-tools, confirmation nonces and rate limits: memory (this process) or redis://HOST:PORT/DB (Redis or Valkey); redis needs a shared confirmation key and a shared store key (store_key in --config or MANGLECP_STORE_KEY)")
}

// logger builds the logger the flags ask for.
func (f *opsFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level must be debug, info, warn or error, got %q", f.logLevel)
	}
	ho := &slog.HandlerOptions{Level: level}
	switch f.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, ho)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, got %q", f.logFormat)
}

// ops is what setupOps prepared; close releases it.
type ops struct {
	metrics http.Handler
	closers []func(context.Context) error
}

func (o *ops) close(ctx context.Context) {
	for i := len(o.closers) - 1; i >= 0; i-- {
		_ = o.closers[i](ctx)
	}
}

// setupOps fills opts with metrics (a registry with Go and process
// collectors), tracing (OTLP over HTTP when the standard OTEL_* variables
// ask for it; off by default) and the shared store.
func (f *opsFlags) setupOps(ctx context.Context, env cmdline.Env, opts *manglecp.Options, logger *slog.Logger) (*ops, error) {
	o := &ops{}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	opts.Metrics = reg
	o.metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})

	if tracingRequested(env) {
		exp, err := otlptracehttp.New(ctx) // endpoint, headers, TLS, timeout from OTEL_EXPORTER_OTLP_*
		if err != nil {
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		res, err := resource.Merge(resource.Default(), resource.Environment())
		if err != nil {
			res = resource.Default()
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)) // sampler from OTEL_TRACES_SAMPLER
		opts.TracerProvider = tp
		o.closers = append(o.closers, tp.Shutdown)
		logger.Info("tracing on: exporting spans with OTLP/HTTP")
	}

	if key := env.Getenv("MANGLECP_CONFIRMATION_KEY"); key != "" && len(opts.ConfirmationKey) == 0 {
		opts.ConfirmationKey = []byte(key)
	}
	switch {
	case f.store == "" || f.store == "memory":
	case strings.HasPrefix(f.store, "redis://") || strings.HasPrefix(f.store, "rediss://"):
		if len(opts.ConfirmationKey) < 16 {
			o.close(ctx)
			return nil, errors.New("--store redis: replicas must share the confirmation key; set confirmation_key in --config or MANGLECP_CONFIRMATION_KEY (at least 16 characters)")
		}
		storeKey := f.storeKey
		if storeKey == "" {
			storeKey = env.Getenv("MANGLECP_STORE_KEY")
		}
		if len(storeKey) < store.MinKeyBytes || storeKey == string(opts.ConfirmationKey) {
			o.close(ctx)
			return nil, fmt.Errorf("--store redis: replicas must share a store key, which authenticates the macro-tools they keep in Redis; set store_key in --config or MANGLECP_STORE_KEY (at least %d characters, and not the confirmation key: hosts hold that one)", store.MinKeyBytes)
		}
		if err := store.CheckKey([]byte(storeKey)); err != nil {
			o.close(ctx)
			return nil, fmt.Errorf("--store redis: the store key (store_key or MANGLECP_STORE_KEY) is not fit: %v; use a random one (for example openssl rand -base64 24), shared by every replica", err)
		}
		redisstore.SetLogger(logger)
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		st, err := redisstore.New(cctx, redisstore.Options{URL: f.store, MaxBytes: opts.MacroCacheBytes, Key: []byte(storeKey)})
		if err != nil {
			o.close(ctx)
			return nil, fmt.Errorf("--store: %w", err)
		}
		opts.Store = st
		o.closers = append(o.closers, func(context.Context) error { return st.Close() })
		logger.Info("shared store: redis", "db", redactURL(f.store))
	default:
		return nil, fmt.Errorf("--store must be memory or redis://HOST:PORT/DB, got %q", redactURL(f.store))
	}
	return o, nil
}

// tracingRequested applies the standard OpenTelemetry variables: tracing
// is on when an OTLP endpoint is configured or OTEL_TRACES_EXPORTER=otlp,
// and off when OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
func tracingRequested(env cmdline.Env) bool {
	if strings.EqualFold(env.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch strings.ToLower(env.Getenv("OTEL_TRACES_EXPORTER")) {
	case "none":
		return false
	case "otlp":
		return true
	}
	return env.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || env.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// redactURL drops credentials from a store URL for messages.
func redactURL(u string) string {
	if at := strings.LastIndex(u, "@"); at >= 0 {
		if i := strings.Index(u, "://"); i >= 0 && i < at {
			return u[:i+3] + "***@" + u[at+1:]
		}
	}
	return u
}

func listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

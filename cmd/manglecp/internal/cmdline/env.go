package cmdline

import "os"

// Env is the environment a command runs in: it looks a variable up as
// os.LookupEnv does (the process's own, in cmd/manglecp). The commands
// read no variable of the process themselves (MANGLECP_*, GOGC,
// GOMEMLIMIT, XDG_CONFIG_HOME and HOME for the key file, the OTEL_* that
// turn tracing on), so that commands with different environments, such as
// tests, run side by side. A nil Env has no variables. Two readers are not
// the command's: the OpenTelemetry exporter reads its settings
// (endpoint, headers, sampler) from the process, and so do the programs
// the command starts (upstreams, language servers, found on the process's
// PATH).
type Env func(key string) (string, bool)

// OSEnv is the process's environment.
func OSEnv() Env { return os.LookupEnv }

// MapEnv is an environment of the variables in vars.
func MapEnv(vars map[string]string) Env {
	return func(key string) (string, bool) {
		v, ok := vars[key]
		return v, ok
	}
}

// Getenv returns the value of key, "" when it is not set.
func (e Env) Getenv(key string) string {
	if e == nil {
		return ""
	}
	v, _ := e(key)
	return v
}

package upstream

import (
	"sync"
	"time"

	"github.com/manglecp/manglecp/internal/child"
)

// Bounds of an upstream's stderr in the server's log.
const (
	maxStderrLine   = 1024 // bytes of one line logged; the rest is cut
	stderrPerSecond = 50   // lines logged per second; more are counted and dropped
)

// killGrace is how long a stopped upstream may take to exit after its
// stdin closed and SIGTERM, before SIGKILL.
const killGrace = 2 * time.Second

// startProcess starts c.Command under internal/child's supervision: its
// own process group (stopped with it), the clean environment of
// [environ], stdin and stdout as pipes and stderr logged. wg counts the
// goroutine that waits for it.
func startProcess(c Config, wg *sync.WaitGroup) (*child.Process, error) {
	log := &stderrLog{c: c}
	p, err := child.Start(child.Config{
		Command:    c.Command,
		Dir:        c.Dir,
		Env:        environ(c),
		StderrLine: log.line,
		MaxLine:    maxStderrLine,
		Grace:      killGrace,
	})
	if err != nil {
		return nil, err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-p.Done()
		log.end()
	}()
	return p, nil
}

// stderrLog copies an upstream's stderr to the log line by line, the rate
// limited. Its methods are called from one goroutine at a time.
type stderrLog struct {
	c               Config
	window          time.Time
	logged, dropped int
}

func (l *stderrLog) line(line string) {
	if now := time.Now(); now.Sub(l.window) >= time.Second {
		l.end()
		l.window, l.logged = now, 0
	}
	if l.logged < stderrPerSecond {
		l.c.Logger.Info("upstream stderr", "upstream", l.c.Name, "line", Sanitize(line, maxStderrLine))
		l.logged++
	} else {
		l.dropped++
	}
}

// end reports the lines dropped since the last report.
func (l *stderrLog) end() {
	if l.dropped > 0 {
		l.c.Logger.Warn("upstream stderr lines dropped", "upstream", l.c.Name, "lines", l.dropped)
		l.dropped = 0
	}
}

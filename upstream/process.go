package upstream

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Bounds of an upstream's stderr in the server's log.
const (
	maxStderrLine   = 1024 // bytes of one line logged; the rest is cut
	stderrPerSecond = 50   // lines logged per second; more are counted and dropped
)

// killGrace is how long a stopped upstream may take to exit after its
// stdin closed and SIGTERM, before SIGKILL.
const killGrace = 2 * time.Second

// process is a running upstream command.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	exited chan struct{}
	once   sync.Once
}

// startProcess starts c.Command in its own process group with stdin and
// stdout as pipes and stderr copied to c.Logger. wg counts the goroutines
// it leaves running.
func startProcess(c Config, wg *sync.WaitGroup) (*process, error) {
	cmd := exec.Command(c.Command[0], c.Command[1:]...)
	cmd.Env = environ(c)
	cmd.Dir = c.Dir
	setProcAttr(cmd)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	// The child holds its ends now; the parent keeps only its own.
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, err
	}
	p := &process{cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{})}
	wg.Add(2)
	go func() {
		defer wg.Done()
		_ = cmd.Wait()
		close(p.exited)
	}()
	go func() {
		defer wg.Done()
		defer errR.Close()
		logStderr(c, errR)
	}()
	return p, nil
}

// stop ends the process: stdin closed and SIGTERM to its group, then
// SIGKILL after killGrace. It returns once the process exited.
func (p *process) stop() {
	p.once.Do(func() {
		_ = p.stdin.Close()
		signalGroup(p.cmd, false)
		select {
		case <-p.exited:
		case <-time.After(killGrace):
			signalGroup(p.cmd, true)
			<-p.exited
		}
		// Whatever of the group still runs holds no pipe of ours.
		signalGroup(p.cmd, true)
		_ = p.stdout.Close()
	})
}

// logStderr copies r to the log line by line, each line bounded and the
// rate limited.
func logStderr(c Config, r io.Reader) {
	br := bufio.NewReaderSize(r, maxStderrLine)
	window := time.Now()
	logged, dropped := 0, 0
	for {
		line, err := readBoundedLine(br)
		if len(line) > 0 {
			if now := time.Now(); now.Sub(window) >= time.Second {
				if dropped > 0 {
					c.Logger.Warn("upstream stderr lines dropped", "upstream", c.Name, "lines", dropped)
				}
				window, logged, dropped = now, 0, 0
			}
			if logged < stderrPerSecond {
				c.Logger.Info("upstream stderr", "upstream", c.Name, "line", Sanitize(line, maxStderrLine))
				logged++
			} else {
				dropped++
			}
		}
		if err != nil {
			if dropped > 0 {
				c.Logger.Warn("upstream stderr lines dropped", "upstream", c.Name, "lines", dropped)
			}
			return
		}
	}
}

// readBoundedLine reads one line, keeping at most maxStderrLine bytes of
// it and discarding the rest.
func readBoundedLine(br *bufio.Reader) (string, error) {
	var keep []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(keep) < maxStderrLine {
			keep = append(keep, chunk[:min(len(chunk), maxStderrLine-len(keep))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		for len(keep) > 0 && (keep[len(keep)-1] == '\n' || keep[len(keep)-1] == '\r') {
			keep = keep[:len(keep)-1]
		}
		return string(keep), err
	}
}

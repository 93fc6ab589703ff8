// Package child starts and supervises a child process the way the
// server's upstreams and language servers need: the command runs in a
// process group of its own, with the environment it is given and nothing
// more, pipes for its standard input and output, its standard error read
// line by line (each line bounded) with the tail kept for messages.
// Stopping it closes its input, asks the whole group to end (SIGTERM),
// and kills the group after a grace period (SIGKILL). When the command
// exits, whatever it left running in its group is killed and the process
// is reaped: nothing it started outlives it, and no goroutine of the
// package outlives [Process.Done]. On Linux the command is also killed
// should the parent die.
//
// Where the system has no process groups (Windows), only the command
// itself is killed.
package child

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/manglecp/manglecp/internal/tailbuf"
)

// Defaults of [Config].
const (
	DefaultGrace     = 2 * time.Second
	DefaultMaxLine   = 1024
	DefaultTailBytes = 2048
)

// Config is what to start and how to supervise it.
type Config struct {
	// Command is the program and its arguments.
	Command []string
	// Dir is the working directory; empty means the parent's.
	Dir string
	// Env is the child's whole environment. Nil gives it an empty one
	// (a clean environment unless the caller passes os.Environ()).
	Env []string
	// StderrLine, when set, receives each line of standard error without
	// its line end, cut at MaxLine bytes. It is called from one goroutine,
	// in order, and never after Done is closed.
	StderrLine func(line string)
	// MaxLine bounds a line given to StderrLine (DefaultMaxLine if 0).
	MaxLine int
	// TailBytes is how much of standard error Tail keeps
	// (DefaultTailBytes if 0).
	TailBytes int
	// Grace is how long Stop waits after SIGTERM before SIGKILL, and how
	// long standard error may stay open (held by a process that left the
	// group) after the command exited (DefaultGrace if 0).
	Grace time.Duration
}

// Process is a running child. Stdin and Stdout are the parent's ends of
// the child's standard input and output; Stop closes both.
type Process struct {
	Stdin  io.WriteCloser
	Stdout io.ReadCloser

	cmd   *exec.Cmd
	grace time.Duration
	tail  *tailbuf.Buffer
	done  chan struct{}
	err   error
	stop  sync.Once
}

// Start starts c.Command. The caller must call Stop (or see Done closed
// and call Stop) to release the pipes.
func Start(c Config) (*Process, error) {
	if len(c.Command) == 0 {
		return nil, errors.New("child: no command")
	}
	if c.MaxLine <= 0 {
		c.MaxLine = DefaultMaxLine
	}
	if c.TailBytes <= 0 {
		c.TailBytes = DefaultTailBytes
	}
	if c.Grace <= 0 {
		c.Grace = DefaultGrace
	}
	cmd := exec.Command(c.Command[0], c.Command[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	setProcAttr(cmd)
	var files []*os.File // every end, closed on failure
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	// The child holds its ends now; the parent keeps only its own.
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		closeAll()
		return nil, err
	}
	p := &Process{Stdin: inW, Stdout: outR, cmd: cmd, grace: c.Grace, tail: tailbuf.New(c.TailBytes), done: make(chan struct{})}
	read := make(chan struct{})
	go func() {
		defer close(read)
		readLines(io.TeeReader(errR, p.tail), c.MaxLine, c.StderrLine)
	}()
	go func() {
		err := cmd.Wait()
		// Nothing of the tree outlives its leader.
		signalGroup(cmd, true)
		t := time.NewTimer(c.Grace)
		select {
		case <-read:
		case <-t.C:
			// A process that left the group still holds the pipe.
		}
		t.Stop()
		errR.Close()
		<-read
		p.err = err
		close(p.done)
	}()
	return p, nil
}

// Pid is the child's process id (and its process group's).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the child has exited, the rest of its group was
// killed, and its standard error was read.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the child ended (the error of [exec.Cmd.Wait]); nil before
// Done is closed or after a clean exit.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Tail is the end of what the child wrote to standard error so far.
func (p *Process) Tail() string { return p.tail.String() }

// Kill kills the child's process group at once (SIGKILL) without
// waiting for it.
func (p *Process) Kill() { signalGroup(p.cmd, true) }

// Stop ends the child: its standard input closed and SIGTERM to its
// group, then SIGKILL after the grace period. It returns once Done is
// closed, with Stdin and Stdout closed. It is safe to call more than
// once and from several goroutines.
func (p *Process) Stop() {
	p.stop.Do(func() {
		_ = p.Stdin.Close()
		signalGroup(p.cmd, false)
		t := time.NewTimer(p.grace)
		select {
		case <-p.done:
		case <-t.C:
			signalGroup(p.cmd, true)
			<-p.done
		}
		t.Stop()
		_ = p.Stdout.Close()
	})
	<-p.done
}

// readLines calls line for every line of r, each cut at max bytes, until
// r ends.
func readLines(r io.Reader, max int, line func(string)) {
	br := bufio.NewReaderSize(r, max)
	for {
		s, err := ReadBoundedLine(br, max)
		if len(s) > 0 && line != nil {
			line(s)
		}
		if err != nil {
			return
		}
	}
}

// ReadBoundedLine reads one line from br, keeping at most max bytes of it
// and discarding the rest, without its line end ("\n" or "\r\n"). The
// error is br's (io.EOF at the end).
func ReadBoundedLine(br *bufio.Reader, max int) (string, error) {
	var keep []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(keep) < max {
			keep = append(keep, chunk[:min(len(chunk), max-len(keep))]...)
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

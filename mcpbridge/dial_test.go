package mcpbridge_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/transport"
)

// slowDialer dials fake over in-memory pairs; every dial after the first
// (New's) takes a second and, with fail, then fails. It honours ctx.
type slowDialer struct {
	fake *fakeServer
	ctx  context.Context // serves the fake's halves
	fail bool

	mu    sync.Mutex
	dials int
}

func (d *slowDialer) dial(ctx context.Context) (*client.Session, error) {
	d.mu.Lock()
	d.dials++
	n := d.dials
	d.mu.Unlock()
	if n > 1 {
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if d.fail {
			return nil, errors.New("connection refused")
		}
	}
	c, s := transport.NewMemoryPair()
	go func() { _ = transport.ServeSession(d.ctx, d.fake, s, nil) }()
	return client.NewSession(ctx, c, &client.Options{Sleep: func(context.Context, time.Duration) error { return nil }})
}

func (d *slowDialer) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dials
}

// connectHosts starts n MCP sessions of b, each with its own host.
func connectHosts(ctx context.Context, t *testing.T, b *mcpbridge.Bridge, n int) []*mcp.ClientSession {
	t.Helper()
	out := make([]*mcp.ClientSession, n)
	for i := range out {
		ct, st := mcp.NewInMemoryTransports()
		go func() { _ = b.Run(ctx, st) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		out[i] = cs
	}
	return out
}

// TestDialSharedNotSerialised (issue 30): the bridge lost its connection
// and the server takes a second to refuse a dial. Four MCP sessions'
// calls meanwhile share one dial and all get their answer after one
// second; under the bridge's mutex each dialed in turn, the last one
// answered after four.
func TestDialSharedNotSerialised(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		d := &slowDialer{fake: newFake(), ctx: ctx, fail: true}
		b, err := mcpbridge.New(ctx, d.dial, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		hosts := connectHosts(ctx, t, b, 4)
		_ = b.Close() // the connection broke: the next call dials
		start := time.Now()
		var wg sync.WaitGroup
		took := make([]time.Duration, len(hosts))
		for i, cs := range hosts {
			wg.Go(func() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "diagnose", Arguments: map[string]any{"facts": [][]any{{"url", "https://x"}}}})
				if err != nil {
					t.Errorf("host %d: %v", i, err)
					return
				}
				if !res.IsError {
					t.Errorf("host %d: the call succeeded without a server", i)
				}
				took[i] = time.Since(start)
			})
		}
		wg.Wait()
		for i, d := range took {
			if d != time.Second {
				t.Errorf("host %d answered after %v, want 1s (one shared dial)", i, d)
			}
		}
		if n := d.count() - 1; n != 1 {
			t.Errorf("%d dials for 4 concurrent calls, want 1", n)
		}
		for _, cs := range hosts {
			_ = cs.Close()
		}
	})
}

// TestDialSurvivesCancelledCaller (issue 30): the call that started a
// dial is cancelled half-way; the dial goes on for the other session
// waiting on it, which gets its answer when the dial completes, with no
// second dial.
func TestDialSurvivesCancelledCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		fake := newFake()
		fake.setEvaluate(selects(tool("fix", false)))
		d := &slowDialer{fake: fake, ctx: ctx}
		b, err := mcpbridge.New(ctx, d.dial, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		hosts := connectHosts(ctx, t, b, 2)
		_ = b.Close()
		args := &mcp.CallToolParams{Name: "diagnose", Arguments: map[string]any{"facts": [][]any{{"url", "https://x"}}}}

		first, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := hosts[0].CallTool(first, args)
			done <- err
		}()
		synctest.Wait() // the first call started the dial
		start := time.Now()
		var second *mcp.CallToolResult
		var secondErr error
		got := make(chan struct{})
		go func() {
			second, secondErr = hosts[1].CallTool(ctx, args)
			close(got)
		}()
		time.Sleep(500 * time.Millisecond) // virtual time: the bubble's clock
		stop()
		if err := <-done; err == nil {
			t.Error("the cancelled call returned no error")
		}
		<-got
		if secondErr != nil || second.IsError {
			t.Fatalf("the call waiting on the dial: %v %+v", secondErr, second)
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("the waiting call answered after %v, want 1s (the first dial)", took)
		}
		if n := d.count() - 1; n != 1 {
			t.Errorf("%d dials, want 1: the cancelled caller cancelled the dial", n)
		}
		for _, cs := range hosts {
			_ = cs.Close()
		}
	})
}

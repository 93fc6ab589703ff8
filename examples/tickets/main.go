// Command tickets serves a complete custom MangleCP domain: one intent
// (triage), one predicate (ticket), one tool (escalate_ticket) whose
// handler is typed. Rules decide when the tool is proposed and which
// tickets it accepts; Go only does the work.
//
//	go run ./examples/tickets            # HTTP on 127.0.0.1:8080
//	go run ./examples/tickets -stdio     # one session on stdin/stdout
package main

import (
	"context"
	"embed"
	"flag"
	"io/fs"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/serve"
)

//go:embed rules
var rules embed.FS

// EscalateIn is the escalate_ticket tool's input, as its tool_param facts
// declare it.
type EscalateIn struct {
	TicketID string `json:"ticket_id"`
}

// EscalateOut is its result.
type EscalateOut struct {
	Escalated string `json:"escalated"`
	Queue     string `json:"queue"`
}

func escalate(ctx context.Context, call *manglecp.Call, in EscalateIn) (*manglecp.Outcome, EscalateOut, error) {
	// A real handler would call the ticket system here, honouring ctx.
	return &manglecp.Outcome{Summary: "Escalated " + in.TicketID + " to on-call."},
		EscalateOut{Escalated: in.TicketID, Queue: "on-call"}, nil
}

// Domain returns the tickets domain.
func Domain() manglecp.Domain {
	sub, _ := fs.Sub(rules, "rules")
	return manglecp.Domain{
		ID:          "tickets",
		Description: "Support ticket triage.",
		Rules:       sub,
		Actions:     map[string]manglecp.ActionSpec{"escalate": manglecp.Typed(escalate)},
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	stdio := flag.Bool("stdio", false, "serve one session on stdin/stdout")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if *stdio {
		err = serve.Stdio(ctx, Domain(), nil, os.Stdin, os.Stdout)
	} else {
		err = serve.ListenAndServe(ctx, *addr, Domain(), nil)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// Command browserjob runs the browser job of docs/browser.md against the
// real binary: it serves the job's page on loopback, starts
// `manglecp serve` on a free port and drives it with `manglecp eval` and
// `manglecp invoke --json`, checking each step. Used by
// scripts/checks/browser.sh.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: browserjob PATH-TO-MANGLECP")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "browser check:", err)
		os.Exit(1)
	}
	fmt.Println("browser check: ok")
}

func run(bin string) error {
	page, err := os.ReadFile("domains/browser/testdata/orders.html")
	if err != nil {
		return err
	}
	app, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer app.Close()
	go http.Serve(app, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	}))
	url := "http://" + app.Addr().String() + "/"

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var logs bytes.Buffer
	srv := exec.CommandContext(ctx, bin, "serve", "--addr", addr)
	srv.Stderr = &logs
	if err := srv.Start(); err != nil {
		return err
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		out, _ := exec.Command("pgrep", "-P", fmt.Sprint(srv.Process.Pid)).Output()
		children := strings.Fields(string(out))
		_ = srv.Process.Signal(os.Interrupt)
		_ = srv.Wait()
		deadline := time.Now().Add(10 * time.Second)
		for _, pid := range children {
			for {
				if _, err := os.Stat("/proc/" + pid); err != nil {
					break
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("process %s of the server (Chromium) still runs after the server stopped", pid)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		if len(children) == 0 {
			return fmt.Errorf("the server ran no Chromium process")
		}
		return nil
	}
	defer stop()
	target := "http://" + addr
	for i := 0; ; i++ {
		if _, err := http.Get(target + "/.well-known/manglecp/manifest.json"); err == nil {
			break
		}
		if i > 100 {
			return fmt.Errorf("the server did not answer:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	cli := func(args ...string) (map[string]any, error) {
		cmd := exec.CommandContext(ctx, bin, append(args, "--json", target)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("manglecp %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
		}
		var v map[string]any
		return v, json.Unmarshal(out, &v)
	}
	write := func(facts []any) (string, error) {
		f, err := os.CreateTemp("", "facts-*.json")
		if err != nil {
			return "", err
		}
		defer f.Close()
		return f.Name(), json.NewEncoder(f).Encode(facts)
	}
	macro := func(resp map[string]any, name string) (string, error) {
		tools, _ := resp["macro_tools"].([]any)
		for _, t := range tools {
			m, _ := t.(map[string]any)
			if m["name"] == name {
				return m["macro_id"].(string), nil
			}
		}
		return "", fmt.Errorf("%s not proposed: %v", name, resp["macro_tools"])
	}

	// observe -> open_page
	facts := []any{map[string]any{"pred": "current_url", "args": []any{url}}}
	path, err := write(facts)
	if err != nil {
		return err
	}
	defer os.Remove(path)
	resp, err := cli("eval", "--intent", "observe", "--facts", path)
	if err != nil {
		return err
	}
	id, err := macro(resp, "open_page")
	if err != nil {
		return err
	}
	res, err := cli("invoke", "--macro", id, "--args", fmt.Sprintf(`{"url":%q}`, url))
	if err != nil {
		return err
	}
	summary := res["observability"].(map[string]any)["summary"].(string)
	opened, _ := json.Marshal(res["result"])
	fmt.Println("open_page:", summary, string(opened))
	if !strings.Contains(string(opened), "GET /api/orders 404") {
		return fmt.Errorf("open_page did not see the 404: %s", opened)
	}
	delta := res["state_delta"].(map[string]any)
	facts = append(facts, delta["assert"].([]any)...)
	// The failed request: the net_response fact with status 404.
	failed := ""
	for _, f := range delta["assert"].([]any) {
		m, _ := f.(map[string]any)
		if args, _ := m["args"].([]any); m["pred"] == "net_response" && len(args) > 2 && fmt.Sprint(args[2]) == "404" {
			failed, _ = args[1].(string)
		}
	}

	// diagnose_error -> diagnose_causal_chain
	path2, err := write(facts)
	if err != nil {
		return err
	}
	defer os.Remove(path2)
	if resp, err = cli("eval", "--intent", "diagnose_error", "--facts", path2); err != nil {
		return err
	}
	if id, err = macro(resp, "diagnose_causal_chain"); err != nil {
		return err
	}
	if res, err = cli("invoke", "--macro", id, "--args", fmt.Sprintf(`{"request_id":%q}`, failed)); err != nil {
		return err
	}
	root, _ := res["result"].(map[string]any)["root_cause"].(string)
	fmt.Println("diagnose_causal_chain:", res["observability"].(map[string]any)["summary"])
	if !strings.Contains(root, "/api/orders returned HTTP 404") {
		return fmt.Errorf("root cause %q", root)
	}

	// automate -> click_element
	facts = append(facts, map[string]any{"pred": "automation_goal", "args": []any{"save the order"}})
	path3, err := write(facts)
	if err != nil {
		return err
	}
	defer os.Remove(path3)
	if resp, err = cli("eval", "--intent", "automate", "--facts", path3); err != nil {
		return err
	}
	if id, err = macro(resp, "click_element"); err != nil {
		return err
	}
	// The live page's button, by its ref (its accessible name).
	if res, err = cli("invoke", "--macro", id, "--args", `{"element_id":"Save order"}`); err != nil {
		return err
	}
	clicked, _ := json.Marshal(res["result"])
	fmt.Println("click_element:", res["observability"].(map[string]any)["summary"], string(clicked))
	if !strings.Contains(string(clicked), "Saved order for 1") {
		return fmt.Errorf("the click did not change the page: %s", clicked)
	}
	// SIGINT: the server drains and stops its browser; nothing is left.
	return stop()
}

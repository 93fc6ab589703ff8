// Command attack-cpu is the client of scripts/attack-cpu.sh: it measures
// the CPU one request costs when its rules join the request's facts
// quadratically but derive almost nothing (issue 9 item 7), and how long a
// light client waits while other clients flood the server with such
// requests.
//
// It first sends one heavy request alone and reports the server's CPU for
// it, then runs -clients heavy clients (identity "heavy") and one light
// client (identity "light", one small diagnose_error request every 250 ms)
// for -duration, and reports the server's CPU per heavy request and the
// light client's latencies. The server's CPU comes from /proc/PID/stat.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080/manglecp/evaluate", "the evaluate endpoint")
	pid := flag.Int("pid", 0, "the server's process id (for its CPU time)")
	clients := flag.Int("clients", 8, "heavy clients")
	duration := flag.Duration("duration", 20*time.Second, "how long the heavy clients flood")
	n := flag.Int("n", 4999, "failed responses and console errors in the heavy request (4999: 648 KB)")
	heavyToken := flag.String("heavy-token", "", "token of the heavy identity")
	lightToken := flag.String("light-token", "", "token of the light identity")
	flag.Parse()
	if *pid == 0 || *heavyToken == "" || *lightToken == "" {
		fmt.Fprintln(os.Stderr, "usage: attack-cpu -pid PID -heavy-token T -light-token T [-url U] [-clients N] [-duration D] [-n N]")
		os.Exit(2)
	}
	heavy := heavyRequest(*n)
	light := lightRequest()
	client := &http.Client{Timeout: 2 * time.Minute}
	post := func(token string, body []byte) (string, time.Duration) {
		start := time.Now()
		req, _ := http.NewRequest(http.MethodPost, *url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return "transport_error", time.Since(start)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var env struct {
			Type    string `json:"type"`
			Payload struct {
				Code string `json:"code"`
			} `json:"payload"`
		}
		_ = json.Unmarshal(raw, &env)
		if env.Type == "error" {
			return env.Payload.Code, time.Since(start)
		}
		return env.Type, time.Since(start)
	}

	fmt.Printf("heavy request: %d facts, %d bytes\n", 2**n+1, len(heavy))
	before := cpu(*pid)
	code, took := post(*heavyToken, heavy)
	fmt.Printf("one heavy request alone: %s in %.2f s wall, %.2f CPU-seconds\n", code, took.Seconds(), cpu(*pid)-before)

	var mu sync.Mutex
	codes := map[string]int{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	before = cpu(*pid)
	for range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, _ := post(*heavyToken, heavy)
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		}()
	}
	var lat []time.Duration
	lightCodes := map[string]int{}
	for end := time.Now().Add(*duration); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		code, took := post(*lightToken, light)
		lightCodes[code]++
		lat = append(lat, took)
	}
	close(stop)
	wg.Wait()
	used := cpu(*pid) - before
	total := 0
	for _, c := range codes {
		total += c
	}
	fmt.Printf("flood: %d heavy clients for %v: %d heavy requests answered %v\n", *clients, *duration, total, codes)
	evaluated := total - codes["rate_limited"] - codes["transport_error"]
	if evaluated > 0 {
		fmt.Printf("server CPU during the flood: %.1f CPU-seconds (light requests included), %.2f CPU-seconds per heavy request evaluated (%d; the rest were refused before evaluation)\n",
			used, used/float64(evaluated), evaluated)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		fmt.Printf("light client: %d requests answered %v; latency p50 %v, p90 %v, max %v\n", len(lat), lightCodes,
			lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*9/10].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	}
}

// cpu returns the user+system CPU seconds of process pid.
func cpu(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The command name (field 2) may hold spaces; fields after ")" start at 3.
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // clock ticks; USER_HZ is 100 on Linux
}

// heavyRequest is the attack: n failed responses in session "a" and n
// console errors in session "b".
func heavyRequest(n int) []byte {
	facts := []any{map[string]any{"pred": "current_url", "args": []any{"https://app.example.com/"}}}
	for i := range n {
		facts = append(facts,
			map[string]any{"pred": "net_response", "args": []any{"a", fmt.Sprint("r", i), 500, 1771510000000 + i}},
			map[string]any{"pred": "console_event", "args": []any{"b", "error", fmt.Sprint("m", i), 1771510000000 + i}})
	}
	return envelope("heavy", map[string]any{"intent": map[string]any{"name": "diagnose_error"}, "facts": facts, "eval_time": "2026-02-19T14:30:05Z"})
}

// lightRequest is the README's diagnose_error request.
func lightRequest() []byte {
	return envelope("light", map[string]any{
		"intent": map[string]any{"name": "diagnose_error"},
		"facts": []any{
			map[string]any{"pred": "current_url", "args": []any{"https://app.example.com/dashboard"}},
			map[string]any{"pred": "console_event", "args": []any{"s1", "error", "TypeError: Cannot read properties of null", 1771510200000}},
			map[string]any{"pred": "net_request", "args": []any{"s1", "r42", "GET", "https://api.example.com/users", 1771510199000}},
			map[string]any{"pred": "net_response", "args": []any{"s1", "r42", 404, 1771510199500}},
		},
		"eval_time": "2026-02-19T14:30:05Z",
	})
}

func envelope(id string, payload any) []byte {
	raw, _ := json.Marshal(map[string]any{"type": "intent_request", "id": id, "manglecp": "2026-02-draft", "payload": payload})
	return raw
}

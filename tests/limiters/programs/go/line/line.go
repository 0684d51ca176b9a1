// Package line is the harness's line protocol for a limiter that is a Go program: the policy
// it is given (RATELIMIT_POLICY), the Redis it talks to (REDIS_URL), and the loop that reads one
// identity per line on stdin and answers each with one JSON line on stdout.
package line

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Policy is a fixed window's that starts at an identity's first request (anchor=first): at
// most Limit admissions per Window.
type Policy struct {
	Limit  int
	Window time.Duration
}

// Decision is one answer. Now is the instant the program read from its own clock.
type Decision struct {
	Allowed bool    `json:"allowed"`
	Now     float64 `json:"now"`
}

// Refuse says why on stderr and exits 2, as the protocol asks of a program that cannot start.
func Refuse(format string, args ...any) {
	fmt.Fprintf(os.Stderr, os.Args[0]+": "+format+"\n", args...)
	os.Exit(2)
}

// FirstRequestWindow reads RATELIMIT_POLICY, which must be a fixed window anchored at the first
// request (fixed-window:anchor=first,limit=N,window=S).
func FirstRequestWindow() Policy {
	spec := os.Getenv("RATELIMIT_POLICY")
	kind, params, _ := strings.Cut(spec, ":")
	if kind != "fixed-window" {
		Refuse("enforces fixed-window policies, not %q", spec)
	}
	policy, anchored := Policy{}, false
	for _, param := range strings.Split(params, ",") {
		name, value, _ := strings.Cut(param, "=")
		if name == "anchor" {
			anchored = value == "first"
			continue
		}
		number, err := strconv.ParseFloat(value, 64)
		if err != nil {
			Refuse("bad parameter %q in %q", param, spec)
		}
		switch name {
		case "limit":
			policy.Limit = int(number)
		case "window":
			policy.Window = time.Duration(number * float64(time.Second))
		}
	}
	if !anchored {
		Refuse("its windows start at an identity's first request (anchor=first), not %q", spec)
	}
	if policy.Limit < 1 || policy.Window <= 0 {
		Refuse("a fixed window needs limit and window, got %q", spec)
	}
	return policy
}

// Client is a go-redis client of the Redis the harness gave the program (REDIS_URL).
func Client() *redis.Client {
	url := os.Getenv("REDIS_URL")
	if url == "" {
		Refuse("REDIS_URL is not set")
	}
	options, err := redis.ParseURL(url)
	if err != nil {
		Refuse("%v", err)
	}
	return redis.NewClient(options)
}

// Serve answers each identity on stdin with check's decision, in order, until stdin ends. A check
// that fails answers its error on one line (not a decision: the harness counts it as one).
func Serve(check func(identity string) (bool, error)) {
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		allowed, err := check(in.Text())
		if err != nil {
			fmt.Fprintf(out, "error: %v\n", err)
		} else {
			now := float64(time.Now().UnixMicro()) / 1e6
			answer, _ := json.Marshal(Decision{Allowed: allowed, Now: now})
			fmt.Fprintf(out, "%s\n", answer)
		}
		out.Flush()
	}
}

package line

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// Bucket is a token bucket's (or GCRA's: the harness judges the two alike): a burst of Capacity,
// then Rate admissions per second.
type Bucket struct {
	Capacity int
	Rate     float64
}

// BucketPolicy reads RATELIMIT_POLICY, which must be gcra:capacity=C,rate=R or
// token-bucket:capacity=C,rate=R (one promise, kept as one timestamp or as a count of tokens).
func BucketPolicy() Bucket {
	spec, numbers, _ := parse("gcra", "token-bucket")
	bucket := Bucket{Capacity: int(numbers["capacity"]), Rate: numbers["rate"]}
	if bucket.Capacity < 1 || bucket.Rate <= 0 {
		Refuse("a bucket needs capacity and rate, got %q", spec)
	}
	return bucket
}

// AlignedWindow reads RATELIMIT_POLICY, which must be a fixed window aligned to multiples of the
// window from the epoch (fixed-window:limit=N,window=S; anchor=aligned and phase=none are the
// defaults). count=admissions and count=attempts are both taken: a window that counts every
// request and admits the first N decides alike under either.
func AlignedWindow() Policy {
	spec, numbers, words := parse("fixed-window")
	if anchor := words["anchor"]; anchor != "" && anchor != "aligned" {
		Refuse("its windows are aligned to multiples of the window (anchor=aligned), not %q", spec)
	}
	if phase := words["phase"]; phase != "" && phase != "none" {
		Refuse("every identity's windows start at the same instants (phase=none), not %q", spec)
	}
	if _, blocks := numbers["block"]; blocks {
		Refuse("it does not block an identity past its window, got %q", spec)
	}
	policy := Policy{
		Limit:  int(numbers["limit"]),
		Window: time.Duration(numbers["window"] * float64(time.Second)),
	}
	if policy.Limit < 1 || policy.Window <= 0 {
		Refuse("a fixed window needs limit and window, got %q", spec)
	}
	return policy
}

// parse splits RATELIMIT_POLICY, whose kind must be one of kinds, into its numbers and its
// words (anchor=first, count=attempts): the spec, the numbers by name, the words by name.
func parse(kinds ...string) (string, map[string]float64, map[string]string) {
	spec := os.Getenv("RATELIMIT_POLICY")
	kind, params, _ := strings.Cut(spec, ":")
	known := false
	for _, each := range kinds {
		known = known || kind == each
	}
	if !known || strings.Contains(spec, "+") {
		Refuse("enforces %s policies, not %q", strings.Join(kinds, " or "), spec)
	}
	numbers, words := map[string]float64{}, map[string]string{}
	for _, param := range strings.Split(params, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(param), "=")
		switch name {
		case "anchor", "phase", "count":
			words[name] = value
			continue
		}
		number, err := strconv.ParseFloat(value, 64)
		if err != nil {
			Refuse("bad parameter %q in %q", param, spec)
		}
		numbers[name] = number
	}
	return spec, numbers, words
}

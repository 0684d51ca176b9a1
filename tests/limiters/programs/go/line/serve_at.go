package line

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// ServeAt is Serve for a limiter that decides by its own clock: check returns the instant it read
// (and decided by) with its decision, and that instant is the answer's now.
func ServeAt(check func(identity string) (bool, time.Time, error)) {
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		allowed, at, err := check(in.Text())
		if err != nil {
			fmt.Fprintf(out, "error: %v\n", err)
		} else {
			answer, _ := json.Marshal(Decision{Allowed: allowed, Now: Seconds(at)})
			fmt.Fprintf(out, "%s\n", answer)
		}
		out.Flush()
	}
}

// Seconds is an instant in epoch seconds, to the microsecond.
func Seconds(at time.Time) float64 {
	return float64(at.UnixMicro()) / 1e6
}

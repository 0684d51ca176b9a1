// clock-reader answers each line of stdin with the time it reads: the time of day in
// milliseconds since the epoch, and the monotonic nanoseconds since its first line. A fork of
// nothing, a limiter of nothing: the test of a Go program's clocks.
package main

import (
	"bufio"
	"fmt"
	"os"
	"time"
)

func main() {
	var first time.Time
	scanner := bufio.NewScanner(os.Stdin)
	for scanner.Scan() {
		now := time.Now()
		if first.IsZero() {
			first = now
		}
		fmt.Printf("%d %d\n", now.UnixMilli(), now.Sub(first).Nanoseconds())
	}
}

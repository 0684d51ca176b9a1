// fixed-window-client-second is an aligned fixed window on go-redis keyed by the client's own
// window: time.Now() divided by the window names the key, and INCR and EXPIRE go in one MULTI
// (TxPipelined), so the count and its TTL are atomic. With every copy's clock true it is correct;
// a copy whose clock is skewed counts into the wrong window (one behind adds to the window that
// is ending, one ahead to the next), and near an edge the true window admits more than limit.
package main

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelimit-harness/goprograms/line"
)

func main() {
	policy := line.AlignedWindow()
	client := line.Client()
	ctx := context.Background()
	window := policy.Window.Microseconds()
	line.ServeAt(func(identity string) (bool, time.Time, error) {
		now := time.Now()
		current := now.UnixMicro() / window
		key := "ratelimit:{" + identity + "}:go-fixed-window-client-second:" +
			strconv.FormatInt(window, 10) + ":" + strconv.FormatInt(current, 10)
		var count *redis.IntCmd
		_, err := client.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			count = pipe.Incr(ctx, key)
			pipe.PExpire(ctx, key, policy.Window)
			return nil
		})
		if err != nil {
			return false, now, err
		}
		return count.Val() <= int64(policy.Limit), now, nil
	})
}

// gcra-client-clock is a GCRA on go-redis in the shape of npm's redis-gcra: one Lua script keeps
// the identity's theoretical arrival time (TAT) and admits a request while TAT - now stays within
// the burst tolerance of capacity emission intervals, but now is an argument, the program's own
// time.Now(). Atomic, yet it decides by the client's clock. Two copies whose clocks are skewed
// over-admit: the copy ahead finds the TAT the other set nearer than it is, and takes the tokens
// its skew refilled early; the copy behind rejects while a token is due. A copy that stalls
// between reading its clock and running the script decides as of the instant it read.
package main

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelimit-harness/goprograms/line"
)

// KEYS[1] the TAT, epoch seconds; ARGV now (epoch seconds, the client's), burst, rate per second.
var gcra = redis.NewScript(`
local now = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local interval = 1 / tonumber(ARGV[3])
local tat = math.max(tonumber(redis.call('GET', KEYS[1])) or now, now)
local new_tat = tat + interval
if now < new_tat - burst * interval then return 0 end
redis.call('SET', KEYS[1], new_tat, 'PX', math.ceil((new_tat - now) * 1000))
return 1`)

func main() {
	bucket := line.BucketPolicy()
	client := line.Client()
	ctx := context.Background()
	line.ServeAt(func(identity string) (bool, time.Time, error) {
		key := "ratelimit:{" + identity + "}:go-gcra-client-clock"
		now := time.Now()
		args := []any{strconv.FormatFloat(line.Seconds(now), 'f', 6, 64), bucket.Capacity, bucket.Rate}
		admitted, err := gcra.Run(ctx, client, []string{key}, args...).Int()
		return err == nil && admitted == 1, now, err
	})
}

// lua-window is a fixed window on go-redis done right: one Lua script counts and starts the
// window's TTL atomically, on the server's clock. It never reads its own clock to decide.
package main

import (
	"context"

	"github.com/redis/go-redis/v9"

	"ratelimit-harness/goprograms/line"
)

var count = redis.NewScript(`
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return count`)

func main() {
	policy := line.FirstRequestWindow()
	client := line.Client()
	ctx := context.Background()
	line.Serve(func(identity string) (bool, error) {
		key := "ratelimit:{" + identity + "}:go-lua-window"
		counted, err := count.Run(ctx, client, []string{key}, policy.Window.Milliseconds()).Int()
		return err == nil && counted <= policy.Limit, err
	})
}

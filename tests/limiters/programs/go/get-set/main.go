// get-set is the chapter's GET-then-SET fixed window on go-redis: GET the identity's count, then
// SET it one higher, the window's TTL set by the first. Two copies that both GET before either
// SETs are both admitted on one count. It never reads its own clock to decide.
package main

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"ratelimit-harness/goprograms/line"
)

func main() {
	policy := line.FirstRequestWindow()
	client := line.Client()
	ctx := context.Background()
	line.Serve(func(identity string) (bool, error) {
		key := "ratelimit:{" + identity + "}:go-get-set"
		count, err := client.Get(ctx, key).Int()
		if errors.Is(err, redis.Nil) {
			return true, client.Set(ctx, key, 1, policy.Window).Err()
		}
		if err != nil || count >= policy.Limit {
			return false, err
		}
		return true, client.SetArgs(ctx, key, count+1, redis.SetArgs{KeepTTL: true}).Err()
	})
}

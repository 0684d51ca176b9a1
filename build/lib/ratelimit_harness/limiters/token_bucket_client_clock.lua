-- Token bucket exactly as Part 5 writes it: atomic, but `now` comes from the caller's clock.
-- KEYS[1]  hash: tokens, last_refill (seconds)
-- ARGV[1]  capacity
-- ARGV[2]  refill rate, tokens per second
-- ARGV[3]  now, seconds since the epoch, from the calling instance's clock
-- returns  1 when allowed, 0 when rejected
local key = KEYS[1]
local capacity = tonumber(ARGV[1])
local refill_rate = tonumber(ARGV[2])
local now = tonumber(ARGV[3])

local bucket = redis.call('HMGET', key, 'tokens', 'last_refill')
local tokens = tonumber(bucket[1]) or capacity
local last_refill = tonumber(bucket[2]) or now

local elapsed = now - last_refill
local new_tokens = math.min(capacity, tokens + elapsed * refill_rate)

if new_tokens < 1 then
  redis.call('HMSET', key, 'tokens', new_tokens, 'last_refill', now)
  redis.call('EXPIRE', key, math.ceil(capacity / refill_rate) + 1)
  return 0
end

redis.call('HMSET', key, 'tokens', new_tokens - 1, 'last_refill', now)
redis.call('EXPIRE', key, math.ceil(capacity / refill_rate) + 1)
return 1

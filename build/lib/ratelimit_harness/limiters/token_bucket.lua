-- Token bucket (Part 5), atomic and on the server's clock. The bucket starts full, refills
-- continuously at rate tokens per second up to capacity, and each admitted request takes one,
-- or as many as it costs. One that costs more than the bucket holds is refused and takes none.
-- KEYS[1]  hash of the identity: tokens, ts = time of that count in microseconds
-- ARGV[1]  capacity
-- ARGV[2]  rate, tokens per second
-- ARGV[3]  now, microseconds since the epoch; empty to read the server's TIME
-- ARGV[4]  optional: what the request costs, in tokens (1 when absent)
-- returns  {allowed 0|1, remaining, reset_after_us, retry_after_us, now_us}
--          reset_after is the time until the bucket is full again
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2]) / 1000000
local now = now_us(ARGV[3])
local cost = tonumber(ARGV[4]) or 1

local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens, last = capacity, now
if state[1] then
  tokens, last = tonumber(state[1]), tonumber(state[2])
end
-- a clock that steps back neither drains the bucket nor credits the same stretch twice
tokens = math.min(capacity, tokens + math.max(0, now - last) * rate)

local allowed, retry_after = 0, math.ceil((cost - tokens) / rate)
if tokens >= cost then
  allowed, tokens, retry_after = 1, tokens - cost, 0
end
local full_after = math.ceil((capacity - tokens) / rate)
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', math.max(last, now))
redis.call('PEXPIRE', KEYS[1], math.ceil(full_after / 1000) + 1)
return {allowed, math.floor(tokens), full_after, retry_after, now}

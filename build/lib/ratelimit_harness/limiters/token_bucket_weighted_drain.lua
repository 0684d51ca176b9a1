-- Token bucket for weighted requests that drains on a refusal (broken): it takes the cost
-- first and refuses when that leaves the bucket short, keeping what is left, none. A request
-- larger than the bucket holds so empties it, and the callers after it are refused wrongly.
-- KEYS[1]  hash of the identity: tokens, ts = time of that count in microseconds
-- ARGV[1]  capacity; ARGV[2], rate; ARGV[3], now; ARGV[4], cost: as token_bucket.lua's
-- returns  {allowed 0|1, remaining, reset_after_us, retry_after_us, now_us}
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2]) / 1000000
local now = now_us(ARGV[3])
local cost = tonumber(ARGV[4])

local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens, last = capacity, now
if state[1] then
  tokens, last = tonumber(state[1]), tonumber(state[2])
end
tokens = math.min(capacity, tokens + math.max(0, now - last) * rate) - cost

local allowed, retry_after = 1, 0
if tokens < 0 then
  allowed, tokens, retry_after = 0, 0, math.ceil(cost / rate)
end
local full_after = math.ceil((capacity - tokens) / rate)
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', math.max(last, now))
redis.call('PEXPIRE', KEYS[1], math.ceil(full_after / 1000) + 1)
return {allowed, math.floor(tokens), full_after, retry_after, now}

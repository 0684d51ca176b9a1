-- Token bucket for weighted requests, atomic and on the server's clock: a request takes cost
-- tokens, and one that costs more than the bucket holds is refused without taking any.
-- KEYS[1]  hash of the identity: tokens, ts = time of that count in microseconds
-- ARGV[1]  capacity
-- ARGV[2]  rate, tokens per second
-- ARGV[3]  now, microseconds since the epoch; empty to read the server's TIME
-- ARGV[4]  cost, tokens this request takes
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
tokens = math.min(capacity, tokens + math.max(0, now - last) * rate)

local allowed, retry_after = 0, math.ceil((cost - tokens) / rate)
if tokens >= cost then
  allowed, tokens, retry_after = 1, tokens - cost, 0
end
local full_after = math.ceil((capacity - tokens) / rate)
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', math.max(last, now))
redis.call('PEXPIRE', KEYS[1], math.ceil(full_after / 1000) + 1)
return {allowed, math.floor(tokens), full_after, retry_after, now}

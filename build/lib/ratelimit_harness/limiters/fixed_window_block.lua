-- Fixed window started by the identity's first request, with a block: the request that finds
-- the window full is refused, and the identity is refused for a block's length from then; then
-- it has a fresh window (rate-limiter-flexible's blockDuration). One atomic script; the key's
-- TTL keeps the time, on the server's clock.
-- KEYS[1]  counter of the identity: every request of its window, or of its block
-- ARGV[1]  limit (requests per window)
-- ARGV[2]  window length, microseconds
-- ARGV[3]  now, microseconds since the epoch; empty to read the server's TIME
-- ARGV[4]  block length, microseconds
-- returns  {allowed 0|1, remaining, reset_after_us, retry_after_us, now_us}
-- Only the request that counts limit + 1 blocks: the ones refused after it are inside its
-- block and leave its end where it is.
local limit = tonumber(ARGV[1])
local now = now_us(ARGV[3])

local count = redis.call('INCR', KEYS[1])
if count == 1 then
  redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2]) / 1000))
elseif count == limit + 1 then
  redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[4]) / 1000))
end
local left = redis.call('PTTL', KEYS[1]) * 1000
if count > limit then
  return {0, 0, left, left, now}
end
return {1, limit - count, left, 0, now}

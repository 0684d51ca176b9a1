-- Sliding window log, atomic: the sorted set holds one member per admitted request.
-- A request is admitted when fewer than limit were admitted in (now - window, now].
-- KEYS[1]  sorted set of the identity, score = admission time in microseconds
-- ARGV[1]  limit
-- ARGV[2]  window length, microseconds
-- ARGV[3]  now, microseconds since the epoch; empty to read the server's TIME
-- ARGV[4]  a member unique to this request
-- returns  {allowed 0|1, remaining, reset_after_us, retry_after_us, now_us}
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = now_us(ARGV[3])

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count >= limit then
  local oldest = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2])
  local newest = tonumber(redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
  return {0, 0, newest + window - now, oldest + window - now, now}
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return {1, limit - count - 1, window, 0, now}

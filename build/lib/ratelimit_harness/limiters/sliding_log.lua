-- Sliding window log, atomic: the sorted set holds one member per request it counts, the
-- admitted ones, or every attempt (count=attempts, the log of a limiter that logs before it
-- decides). A request is admitted when fewer than limit were counted in (now - window, now].
-- KEYS[1]  sorted set of the identity, score = the request's time in microseconds
-- ARGV[1]  limit
-- ARGV[2]  window length, microseconds
-- ARGV[3]  now, microseconds since the epoch; empty to read the server's TIME
-- ARGV[4]  a member unique to this request
-- ARGV[5]  'attempts' to log every request, refused or not; empty to log admissions only
-- returns  {allowed 0|1, remaining, reset_after_us, retry_after_us, now_us}
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = now_us(ARGV[3])
local attempts = ARGV[5] == 'attempts'

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if attempts or count < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
end
if count >= limit then
  -- room comes back once all but limit - 1 of what is logged now have slid out
  local logged = redis.call('ZCARD', KEYS[1])
  local at = logged - limit
  local freeing = tonumber(redis.call('ZRANGE', KEYS[1], at, at, 'WITHSCORES')[2])
  local newest = tonumber(redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
  return {0, 0, newest + window - now, freeing + window - now, now}
end
return {1, limit - count - 1, window, 0, now}

-- Fixed window, check-and-increment in one atomic step (the chapter's Part 7 Lua),
-- with the window computed from the server's clock, not the caller's.
-- KEYS[1]  hash of the identity: w = index of the current window, n = requests admitted in it
-- ARGV[1]  limit (requests per window)
-- ARGV[2]  window length, microseconds
-- ARGV[3]  now, microseconds since the epoch; empty to read the server's TIME
-- returns  {allowed 0|1, remaining, reset_after_us, retry_after_us, now_us}
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = now_us(ARGV[3])

local index = math.floor(now / window)
local reset_after = (index + 1) * window - now
local state = redis.call('HMGET', KEYS[1], 'w', 'n')
local count = 0
if tonumber(state[1]) == index then
  count = tonumber(state[2])
end
if count >= limit then
  return {0, 0, reset_after, reset_after, now}
end
redis.call('HSET', KEYS[1], 'w', index, 'n', count + 1)
redis.call('PEXPIRE', KEYS[1], math.ceil(reset_after / 1000))
return {1, limit - count - 1, reset_after, 0, now}

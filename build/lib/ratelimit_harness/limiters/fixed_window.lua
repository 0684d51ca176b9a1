-- Fixed window, check-and-increment in one atomic step (the chapter's Part 7 Lua),
-- with the window computed from the server's clock, not the caller's.
-- KEYS[1]  hash of the identity: w = index of the current window, n = requests admitted in it
-- ARGV[1]  limit (requests per window)
-- ARGV[2]  window length, microseconds
-- ARGV[3]  now, microseconds since the epoch; empty to read the server's TIME
-- ARGV[4]  where the identity's windows start past each multiple of the window, microseconds
--          (its phase: 0, or absent, for windows aligned to the epoch)
-- returns  {allowed 0|1, remaining, reset_after_us, retry_after_us, now_us}
-- The key's TTL is set when its window starts and runs to that window's end, so a request in
-- the same window only counts itself (HINCRBY keeps the TTL).
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = now_us(ARGV[3])
local origin = tonumber(ARGV[4]) or 0

local index = math.floor((now - origin) / window)
local reset_after = (index + 1) * window + origin - now
local state = redis.call('HMGET', KEYS[1], 'w', 'n')
local current = tonumber(state[1]) == index
local count = current and tonumber(state[2]) or 0
if count >= limit then
  return {0, 0, reset_after, reset_after, now}
end
if current then
  redis.call('HINCRBY', KEYS[1], 'n', '1')
else
  redis.call('HSET', KEYS[1], 'w', index, 'n', '1')
  redis.call('PEXPIRE', KEYS[1], math.ceil(reset_after / 1000))
end
return {1, limit - count - 1, reset_after, 0, now}

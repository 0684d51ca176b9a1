-- GCRA, the generic cell rate algorithm (as redis-cell and redis_rate use it): one timestamp,
-- the theoretical arrival time (TAT) of the next request at the sustained rate. A request is
-- admitted while TAT - now stays within the burst tolerance of capacity emission intervals.
-- KEYS[1]  string: the TAT in microseconds since the epoch
-- ARGV[1]  capacity (burst)
-- ARGV[2]  rate, requests per second
-- ARGV[3]  now, microseconds since the epoch; empty to read the server's TIME
-- returns  {allowed 0|1, remaining, reset_after_us, retry_after_us, now_us}
local capacity = tonumber(ARGV[1])
local interval = 1000000 / tonumber(ARGV[2])
local now = now_us(ARGV[3])

local tolerance = capacity * interval
local tat = math.max(tonumber(redis.call('GET', KEYS[1])) or now, now)
local new_tat = tat + interval
local allow_at = new_tat - tolerance
if now < allow_at then
  return {0, 0, math.ceil(tat - now), math.ceil(allow_at - now), now}
end
redis.call('SET', KEYS[1], new_tat, 'PX', math.ceil((new_tat - now) / 1000))
-- tiny slack: interval sums are not exact in floating point
local remaining = math.floor((tolerance - (new_tat - now)) / interval + 1e-9)
return {1, remaining, math.ceil(new_tat - now), 0, now}

-- Leaky bucket as a queue for outbound calls (Part 6): accepted requests leave at a fixed
-- rate, one every 1/rate seconds, and at most capacity wait. The queue is kept as the
-- departure time of its last request; an accepted request departs one interval after it
-- (or now, when the queue is empty and the last departure is an interval old).
-- KEYS[1]  string: departure time of the last accepted request, microseconds since the epoch
-- ARGV[1]  capacity, requests that may wait
-- ARGV[2]  rate, departures per second
-- ARGV[3]  now, microseconds since the epoch; empty to read the server's TIME
-- returns  {accepted 0|1, free places left, reset_after_us, retry_after_us, now_us, delay_us}
--          delay is how long the caller waits before its call departs
local capacity = tonumber(ARGV[1])
local interval = 1000000 / tonumber(ARGV[2])
local now = now_us(ARGV[3])

local tail = tonumber(redis.call('GET', KEYS[1]))
local waiting = 0
if tail and tail > now then
  -- departures at tail, tail - interval, ... that are still in the future (1e-9: float slack)
  waiting = math.ceil((tail - now) / interval - 1e-9)
end
if waiting >= capacity then
  local first_to_leave = tail - (waiting - 1) * interval
  return {0, 0, math.ceil(tail - now), math.ceil(first_to_leave - now), now, 0}
end
local depart = now
if tail then
  depart = math.max(now, tail + interval)
end
-- kept one interval past the departure, so the next one cannot leave sooner than that
redis.call('SET', KEYS[1], depart, 'PX', math.ceil((depart - now + interval) / 1000))
return {1, capacity - waiting - 1, math.ceil(depart - now), 0, now, math.ceil(depart - now)}

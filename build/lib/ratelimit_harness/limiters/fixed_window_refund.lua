-- Give back a request fixed_window.lua admitted (its work failed downstream, say).
-- KEYS[1]  the identity's hash, as fixed_window.lua keeps it: w = window index, n = admitted
-- ARGV[1]  the index of the window the request was admitted in (from the decision's now)
-- ARGV[2]  what the request cost
-- returns  1 if given back, 0 if its window has ended (nothing there counts it any more)
-- One script: the count cannot change between reading it and writing it back.
local state = redis.call('HMGET', KEYS[1], 'w', 'n')
if tonumber(state[1]) ~= tonumber(ARGV[1]) then
  return 0
end
local left = math.max(0, (tonumber(state[2]) or 0) - tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], 'n', left)
return 1

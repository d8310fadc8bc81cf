--#include permit_prelude
-- Permits: count the permits held on a resource.
-- Runs after permit_prelude.lua (expired permits removed).
--
-- KEYS: permits (see permit_acquire.lua). Returns the count.
local n = redis.call('ZCARD', KEYS[1])
if n > 0 and redis.call('ZSCORE', KEYS[1], '') then
	return n - 1
end
return n

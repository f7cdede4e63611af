// Replaced by the symcache's tests.

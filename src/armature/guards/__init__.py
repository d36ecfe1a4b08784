"""Sources (where a value lives), guards (what must stay true) and the
generator of the one guard function per cache entry."""

module github.com/lockkit/lock/cmd/lockctl

go 1.25.0

require (
	github.com/bradfitz/gomemcache v0.0.0-20260422231931-4d751bb6e37c
	github.com/lockkit/lock v0.1.0
	github.com/redis/rueidis v1.0.79
)

require (
	golang.org/x/sys v0.47.0
	golang.org/x/term v0.45.0
)

module github.com/lockkit/lock

go 1.25

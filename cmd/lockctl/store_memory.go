package main

import (
	"context"

	"github.com/lockkit/lock/stores/memory"
)

// memory://[name]: a store in lockctl's own memory. It locks nothing
// between processes: it serves check and bench, which run every worker in
// one process, and demonstrations.

func init() { schemes["memory"] = parseMemory }

func parseMemory(u *storeURL) (*storeSpec, error) {
	if err := u.checkParams(); err != nil {
		return nil, err
	}
	if err := u.noUser(); err != nil {
		return nil, err
	}
	if len(u.hosts) > 1 || u.path != "" {
		return nil, u.bad("name", "want memory:// or memory://NAME")
	}
	name := u.name()
	s := memory.New(memory.WithName(name))
	return &storeSpec{
		display:   u.display,
		name:      name,
		kind:      "memory",
		fences:    true,
		raises:    true,
		inProcess: true,
		record:    storeRecord{Kind: "memory", Servers: []string{name}},
		open: func(context.Context) (*openStore, error) {
			return &openStore{
				Store: s,
				close: func() {},
				forceRelease: func(ctx context.Context, resource string) (bool, error) {
					if err := ctx.Err(); err != nil {
						return false, err
					}
					return s.Expire(resource), nil
				},
				forceReleasePermits: func(ctx context.Context, resource string) (bool, error) {
					if err := ctx.Err(); err != nil {
						return false, err
					}
					return s.ExpirePermits(resource) > 0, nil
				},
			}, nil
		},
	}, nil
}

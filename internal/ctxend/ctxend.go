// Package ctxend decides whether a context has ended the way every part
// of this repository must decide it: a deadline that has passed counts,
// even before the context reports it. A client's socket deadline can end
// a call a moment before its context says DeadlineExceeded, and the
// call's error is then the caller's, not a store's failure.
package ctxend

import (
	"context"
	"time"
)

// Err returns ctx's error; context.DeadlineExceeded if ctx's deadline has
// passed but ctx does not report it yet; nil while ctx is live.
func Err(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

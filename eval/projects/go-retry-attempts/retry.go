// Package retry runs an operation again, with exponential backoff, until it succeeds.
package retry

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrNoAttempts is returned by a Policy that allows no attempt at all.
var ErrNoAttempts = errors.New("retry: MaxAttempts must be at least 1")

// Policy says how often and how patiently to retry.
type Policy struct {
	// MaxAttempts is the total number of calls, the first one included.
	MaxAttempts int
	// BaseDelay is the wait before the second attempt; each later wait doubles.
	BaseDelay time.Duration
	// MaxDelay caps a single wait (0: no cap).
	MaxDelay time.Duration
	// Sleep waits; nil uses a timer that a cancelled context interrupts. Tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Do calls op until it returns nil, returns a permanent error, or MaxAttempts calls have
// been made. op gets the attempt number, starting at 1. The last error is returned wrapped.
func (p Policy) Do(ctx context.Context, op func(attempt int) error) error {
	if p.MaxAttempts < 1 {
		return ErrNoAttempts
	}
	var err error
	for attempt := 1; attempt < p.MaxAttempts; attempt++ {
		if attempt > 1 {
			if serr := p.sleep(ctx, p.Delay(attempt-1)); serr != nil {
				return serr
			}
		}
		err = op(attempt)
		if err == nil {
			return nil
		}
		var permanent *permanentError
		if errors.As(err, &permanent) {
			return permanent.err
		}
	}
	return fmt.Errorf("retry: giving up after %d attempts: %w", p.MaxAttempts, err)
}

func (p Policy) sleep(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as not worth retrying: Do returns it at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

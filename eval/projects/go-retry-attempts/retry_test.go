package retry

import (
	"context"
	"errors"
	"testing"
	"time"
)

// recorder is a Sleep that records the waits instead of waiting.
type recorder struct{ waits []time.Duration }

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.waits = append(r.waits, d)
	return ctx.Err()
}

func TestSucceedsFirstTime(t *testing.T) {
	rec := &recorder{}
	p := Policy{MaxAttempts: 3, BaseDelay: time.Second, Sleep: rec.sleep}
	calls := 0
	err := p.Do(context.Background(), func(int) error { calls++; return nil })
	if err != nil || calls != 1 || len(rec.waits) != 0 {
		t.Fatalf("err=%v calls=%d waits=%v", err, calls, rec.waits)
	}
}

func TestSucceedsOnSecondAttempt(t *testing.T) {
	rec := &recorder{}
	p := Policy{MaxAttempts: 5, BaseDelay: 10 * time.Millisecond, Sleep: rec.sleep}
	var seen []int
	err := p.Do(context.Background(), func(attempt int) error {
		seen = append(seen, attempt)
		if attempt < 2 {
			return errors.New("flaky")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] != 1 || seen[1] != 2 {
		t.Fatalf("attempts %v", seen)
	}
	if len(rec.waits) != 1 || rec.waits[0] != 10*time.Millisecond {
		t.Fatalf("waits %v", rec.waits)
	}
}

func TestPermanentErrorStopsAtOnce(t *testing.T) {
	boom := errors.New("bad request")
	p := Policy{MaxAttempts: 5, Sleep: (&recorder{}).sleep}
	calls := 0
	err := p.Do(context.Background(), func(int) error { calls++; return Permanent(boom) })
	if !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("err=%v calls=%d", err, calls)
	}
}

func TestCancelledContextStopsWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := Policy{MaxAttempts: 5, BaseDelay: time.Hour}
	calls := 0
	err := p.Do(ctx, func(int) error { calls++; cancel(); return errors.New("down") })
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("err=%v calls=%d", err, calls)
	}
}

func TestZeroAttemptsIsAnError(t *testing.T) {
	if err := (Policy{}).Do(context.Background(), func(int) error { return nil }); err != ErrNoAttempts {
		t.Fatalf("got %v", err)
	}
}

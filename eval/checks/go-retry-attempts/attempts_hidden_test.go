package retry

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestMakesExactlyMaxAttempts(t *testing.T) {
	rec := &recorder{}
	p := Policy{MaxAttempts: 3, BaseDelay: 100 * time.Millisecond, Sleep: rec.sleep}
	down := errors.New("connection refused")
	calls := 0
	err := p.Do(context.Background(), func(int) error { calls++; return down })
	if calls != 3 {
		t.Fatalf("made %d calls, want 3", calls)
	}
	if !errors.Is(err, down) || !strings.Contains(err.Error(), "after 3 attempts") {
		t.Fatalf("err = %v", err)
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}
	if len(rec.waits) != len(want) || rec.waits[0] != want[0] || rec.waits[1] != want[1] {
		t.Fatalf("waits %v, want %v", rec.waits, want)
	}
}

func TestSingleAttemptRunsOnce(t *testing.T) {
	rec := &recorder{}
	p := Policy{MaxAttempts: 1, BaseDelay: time.Second, Sleep: rec.sleep}
	calls := 0
	err := p.Do(context.Background(), func(int) error { calls++; return errors.New("down") })
	if calls != 1 || err == nil || len(rec.waits) != 0 {
		t.Fatalf("calls=%d err=%v waits=%v", calls, err, rec.waits)
	}
}

func TestSucceedsOnLastAttempt(t *testing.T) {
	p := Policy{MaxAttempts: 4, Sleep: (&recorder{}).sleep}
	err := p.Do(context.Background(), func(attempt int) error {
		if attempt < 4 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("err = %v", err)
	}
}

func TestStillStopsOnPermanentError(t *testing.T) {
	boom := errors.New("forbidden")
	p := Policy{MaxAttempts: 3, Sleep: (&recorder{}).sleep}
	calls := 0
	if err := p.Do(context.Background(), func(int) error { calls++; return Permanent(boom) }); !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("err=%v calls=%d", err, calls)
	}
}

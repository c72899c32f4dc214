package retry

import (
	"testing"
	"time"
)

func TestDelayDoublesUpToTheCap(t *testing.T) {
	p := Policy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		if got := p.Delay(i + 1); got != w*time.Millisecond {
			t.Errorf("Delay(%d) = %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
}

func TestDelayWithoutCap(t *testing.T) {
	p := Policy{BaseDelay: time.Second}
	if got := p.Delay(4); got != 8*time.Second {
		t.Fatalf("Delay(4) = %v", got)
	}
}

package retry

import "time"

// Delay is the wait after the n-th failed attempt (n >= 1): BaseDelay doubled n-1 times,
// capped at MaxDelay when that is set.
func (p Policy) Delay(n int) time.Duration {
	if n < 1 {
		return 0
	}
	d := p.BaseDelay
	for i := 1; i < n; i++ {
		d *= 2
		if p.MaxDelay > 0 && d >= p.MaxDelay {
			return p.MaxDelay
		}
	}
	if p.MaxDelay > 0 && d > p.MaxDelay {
		return p.MaxDelay
	}
	return d
}

package ledger

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseAmount reads "12.34", "-5", "0.5" as cents. At most two decimals; no thousands
// separators.
func ParseAmount(s string) (int64, error) {
	s = strings.TrimSpace(s)
	neg := strings.HasPrefix(s, "-")
	digits := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	whole, frac, hasDot := strings.Cut(digits, ".")
	if whole == "" || (hasDot && (frac == "" || len(frac) > 2)) {
		return 0, fmt.Errorf("invalid amount %q", s)
	}
	for len(frac) < 2 {
		frac += "0"
	}
	units, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || units < 0 {
		return 0, fmt.Errorf("invalid amount %q", s)
	}
	cents, err := strconv.ParseInt(frac, 10, 64)
	if err != nil || cents < 0 {
		return 0, fmt.Errorf("invalid amount %q", s)
	}
	total := units*100 + cents
	if neg {
		total = -total
	}
	return total, nil
}

// FormatAmount prints cents as "12.34" / "-0.05".
func FormatAmount(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s%d.%02d", sign, cents/100, cents%100)
}

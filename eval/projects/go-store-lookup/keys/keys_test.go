package keys

import "testing"

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"products/42":    "products/42",
		" /Products/42/": "products/42",
		"\tA":            "a",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}
